"""Every limit of limits.py at its boundary and just past it: the boundary is accepted, one past is
refused with a reason that names the field and the limit (JobRejected for a job, a decode error
that closes the link for any other message)."""

from __future__ import annotations

import math

import msgspec
import pytest

from sparrow_runtime.client.core import build_submit
from sparrow_runtime.errors import FrameTooLarge, ProtocolError
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire import limits
from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.messages import (
    Authenticate,
    Constraint,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    JobAccepted,
    JobRejected,
    Outcome,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    SubmitJob,
)


def _decode(fields: list) -> list:
    """Decode a raw tagged array as a peer would send it."""
    body = msgspec.msgpack.encode(fields)
    return FrameDecoder().feed(len(body).to_bytes(4, "big") + body)


NAME_OK, NAME_OVER = "n" * limits.MAX_NAME, "n" * (limits.MAX_NAME + 1)
COUNT_OK, COUNT_OVER = limits.MAX_PROBES_PER_JOB, limits.MAX_PROBES_PER_JOB + 1


@pytest.mark.parametrize(
    "ok, over, field",
    [
        ([23, 1, "u", 0, COUNT_OK], [23, 1, "u", 0, COUNT_OVER], "EnqueueReservations.count"),
        ([23, 1, "u", 0, 1], [23, 1, "u", 0, 0], "EnqueueReservations.count"),
        (
            [23, 1, "u", limits.PRIORITY_MAX, 1],
            [23, 1, "u", limits.PRIORITY_MAX + 1, 1],
            "EnqueueReservations.priority",
        ),
        (
            [23, 1, "u", limits.PRIORITY_MIN, 1],
            [23, 1, "u", limits.PRIORITY_MIN - 1, 1],
            "EnqueueReservations.priority",
        ),
        ([23, 1, NAME_OK, 0, 1], [23, 1, NAME_OVER, 0, 1], "EnqueueReservations.user"),
        ([20, "nm", limits.MAX_SLOTS], [20, "nm", limits.MAX_SLOTS + 1], "RegisterNodeMonitor.slots"),
        ([20, "nm", 1], [20, "nm", 0], "RegisterNodeMonitor.slots"),
        ([20, NAME_OK, 1], [20, NAME_OVER, 1], "RegisterNodeMonitor.node_id"),
        (
            [20, "nm", 1, ["l"] * limits.MAX_LABELS],
            [20, "nm", 1, ["l"] * (limits.MAX_LABELS + 1)],
            "RegisterNodeMonitor.labels",
        ),
        ([20, "nm", 1, [NAME_OK]], [20, "nm", 1, [NAME_OVER]], "RegisterNodeMonitor.labels"),
        ([22, limits.MAX_COUNT, 0], [22, limits.MAX_COUNT + 1, 0], "Heartbeat.queued"),
        ([22, 0, 0], [22, -1, 0], "Heartbeat.queued"),
        ([25, limits.MAX_ID], [25, limits.MAX_ID + 1], "GetTask.job_id"),
        ([28, 1, limits.MAX_ID, [True, b""]], [28, 1, -1, [True, b""]], "OutcomeToScheduler.task"),
        ([28, 1, 0, [False, b"", "e", 6]], [28, 1, 0, [False, b"", "e", 7]], "OutcomeToScheduler.outcome.failure"),
        (
            [2, 3, "client", NAME_OK, b"m" * 64, b"n" * 32],
            [2, 3, "client", NAME_OVER, b"m" * 32, b"n" * 32],
            "Authenticate.peer_id",
        ),
        ([2, 3, "client", "c", b"m" * 64, b"n" * 32], [2, 3, "client", "c", b"m" * 65, b"n" * 32], "Authenticate.mac"),
        ([10, limits.MAX_ID, [b"t"]], [10, limits.MAX_ID + 1, [b"t"]], "SubmitJob.ref"),
    ],
)
def test_message_field_limits_are_checked_at_decode(ok, over, field):
    assert len(_decode(ok)) == 1
    with pytest.raises(ProtocolError, match=rf"invalid {field}: "):
        _decode(over)


def test_frame_limits_are_checked_at_the_length_prefix():
    """The decoder refuses a frame from its 4-byte length alone: the body is never buffered."""
    decoder = FrameDecoder(max_frame=limits.HANDSHAKE_MAX_FRAME)
    fits = encode_frames([Authenticate(3, "client", "x" * 100, b"m" * 32, b"n" * 32)])
    assert decoder.feed(bytes(fits))
    assert (
        FrameDecoder(max_frame=limits.HANDSHAKE_MAX_FRAME).feed(limits.HANDSHAKE_MAX_FRAME.to_bytes(4, "big")) == []
    )  # exactly the limit: waits for the body
    with pytest.raises(FrameTooLarge, match="8193 bytes exceeds the limit of 8192"):
        FrameDecoder(max_frame=limits.HANDSHAKE_MAX_FRAME).feed((limits.HANDSHAKE_MAX_FRAME + 1).to_bytes(4, "big"))


def _scheduler_answer(logic: SchedulerLogic, msg: SubmitJob):
    (reply,) = [m for _, m in logic.on_client_messages("client", [msg]) if type(m) in (JobAccepted, JobRejected)]
    return reply


def _logic() -> SchedulerLogic:
    logic = SchedulerLogic(seed=1)
    logic.on_node_messages("nm", [RegisterNodeMonitor("nm", 4, instance="i")])
    return logic


def _job(n_tasks=1, **fields) -> SubmitJob:
    return SubmitJob(1, [b"t"] * n_tasks, **fields)


P = limits.MAX_PROBE_RATIO
PREFER_TASKS = limits.MAX_PREFERRED_PER_JOB // limits.MAX_PREFERRED_NODES  # tasks that fill task_prefer's limit
JOB_CASES = [
    # (fields at the limit, fields one past it, what the reason must say)
    (
        dict(n_tasks=limits.MAX_TASKS_PER_JOB, probe_ratio=1.0),
        dict(n_tasks=limits.MAX_TASKS_PER_JOB + 1, probe_ratio=1.0),
        f"over the limit of {limits.MAX_TASKS_PER_JOB} per job",
    ),
    (dict(probe_ratio=P), dict(probe_ratio=math.nextafter(P, math.inf)), f"over the limit of {P:g}"),
    (
        dict(n_tasks=limits.MAX_PROBES_PER_JOB // 4, probe_ratio=4.0),
        dict(n_tasks=limits.MAX_PROBES_PER_JOB // 4 + 1, probe_ratio=4.0),
        f"over the limit of {limits.MAX_PROBES_PER_JOB} per job",
    ),
    (dict(probe_ratio=1.0), dict(probe_ratio=math.nextafter(1.0, 0)), "probe_ratio must be a finite number >= 1"),
    (
        dict(user=NAME_OK),
        dict(user=NAME_OVER),
        f"user: {limits.MAX_NAME + 1} characters, over the limit of {limits.MAX_NAME}",
    ),
    (dict(priority=limits.PRIORITY_MAX), dict(priority=limits.PRIORITY_MAX + 1), "priority: "),
    (dict(priority=limits.PRIORITY_MIN), dict(priority=limits.PRIORITY_MIN - 1), "priority: "),
    (
        dict(constraint=Constraint(labels=("l",) * limits.MAX_LABELS)),
        dict(constraint=Constraint(labels=("l",) * (limits.MAX_LABELS + 1))),
        f"constraint: has {limits.MAX_LABELS + 1} labels",
    ),
    (
        dict(constraint=Constraint(node_monitors=("nm",) * limits.MAX_CONSTRAINT_NODES)),
        dict(constraint=Constraint(node_monitors=("nm",) * (limits.MAX_CONSTRAINT_NODES + 1))),
        "constraint: names 10001 node monitors",
    ),
    (
        dict(constraint=Constraint(labels=(NAME_OK,))),
        dict(constraint=Constraint(labels=(NAME_OVER,))),
        "constraint: a name of 201",
    ),
    (
        dict(n_tasks=2, task_constraints=[None, Constraint(labels=(NAME_OK,))]),
        dict(n_tasks=2, task_constraints=[None, Constraint(labels=(NAME_OVER,))]),
        "task_constraints[1]: a name of 201",
    ),
    (
        dict(n_tasks=2, task_prefer=[(), ("nm",) * limits.MAX_PREFERRED_NODES]),
        dict(n_tasks=2, task_prefer=[(), ("nm",) * (limits.MAX_PREFERRED_NODES + 1)]),
        f"task_prefer[1]: names {limits.MAX_PREFERRED_NODES + 1} node monitors, over the limit of "
        f"{limits.MAX_PREFERRED_NODES}",
    ),
    (
        dict(n_tasks=2, task_prefer=[(NAME_OK,), ()]),
        dict(n_tasks=2, task_prefer=[(NAME_OVER,), ()]),
        "task_prefer[0]: a name of 201",
    ),
    (
        dict(n_tasks=PREFER_TASKS, task_prefer=[("nm",) * limits.MAX_PREFERRED_NODES] * PREFER_TASKS),
        dict(n_tasks=PREFER_TASKS + 1, task_prefer=[("nm",) * limits.MAX_PREFERRED_NODES] * PREFER_TASKS + [("nm",)]),
        f"task_prefer: names {limits.MAX_PREFERRED_PER_JOB + 1} node monitors in all, over the limit of "
        f"{limits.MAX_PREFERRED_PER_JOB} per job",
    ),
]


@pytest.mark.parametrize("at, past, reason", JOB_CASES)
def test_job_limits_are_answered_with_a_reason_naming_the_field_and_limit(at, past, reason):
    """At the limit the scheduler takes the job; one past, JobRejected says which field and limit
    (the connection stays); the client refuses the same job before sending, with the same words."""
    accepted = _scheduler_answer(_logic(), _job(**at))
    assert type(accepted) is JobAccepted, getattr(accepted, "reason", "")
    logic = _logic()
    rejected = _scheduler_answer(logic, _job(**past))
    assert type(rejected) is JobRejected and reason in rejected.reason
    assert logic.jobs == {}
    past = dict(past)
    n_tasks = past.pop("n_tasks", 1)
    with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        build_submit(
            [b"t"] * n_tasks,
            past.pop("user", ""),
            past.pop("priority", 0),
            past.pop("probe_ratio", None),
            past.get("constraint") or past.get("task_constraints"),
            prefer=past.get("task_prefer"),
        )


def test_an_unknown_sampling_is_rejected_by_both_sides():
    """sampling "optimal" (or a non-str from a hostile peer): JobRejected naming the choices, the
    connection stays; the client refuses the same before sending."""
    logic = _logic()
    for sampling in ("optimal", "x" * 10_000, 3):
        rejected = _scheduler_answer(logic, _job(sampling=sampling))
        assert type(rejected) is JobRejected and "is not one of batch, per_task" in rejected.reason
        assert len(rejected.reason) < limits.MAX_REASON
    assert logic.jobs == {}
    with pytest.raises(ValueError, match="sampling: 'optimal' is not one of batch, per_task"):
        build_submit([b"t"], "", 0, None, None, sampling="optimal")
    with pytest.raises(TypeError, match="sampling must be a str"):
        build_submit([b"t"], "", 0, None, None, sampling=None)


def test_task_prefer_with_the_wrong_number_of_entries_is_rejected_by_both_sides():
    """One preference for a job of two tasks: JobRejected from the scheduler, ValueError from the
    client before sending, each saying how many entries for how many tasks."""
    logic = _logic()
    rejected = _scheduler_answer(logic, _job(n_tasks=2, task_prefer=[("nm",)]))
    assert type(rejected) is JobRejected and rejected.reason == "task_prefer: 1 entries for 2 tasks"
    assert logic.jobs == {}
    with pytest.raises(ValueError, match="prefer has 1 entries for 2 tasks"):
        build_submit([b"t"] * 2, "", 0, None, None, prefer=[["nm"]])


def test_the_schedulers_own_probe_ratio_is_held_to_the_probe_limit_too():
    """A job that leaves probe_ratio to a scheduler configured high is still bounded in probes."""
    logic = SchedulerLogic(seed=1, probe_ratio=50.0)
    logic.on_node_messages("nm", [RegisterNodeMonitor("nm", 4, instance="i")])
    rejected = _scheduler_answer(logic, _job(n_tasks=limits.MAX_PROBES_PER_JOB // 50 + 1))
    assert type(rejected) is JobRejected and "probe_ratio: 50 x 4001 tasks makes 200050 probes" in rejected.reason


def test_huge_probe_ratio_from_the_issue_is_rejected_not_allocated():
    """The adversarial run's probe_ratio=1e12 (std::bad_alloc, the scheduler died) and 3e7 (a 3.2 s
    stall) are rejected at once."""
    logic = _logic()
    for ratio in (1e12, 3e7, math.inf, math.nan):
        reply = _scheduler_answer(logic, _job(probe_ratio=ratio))
        assert type(reply) is JobRejected and "probe_ratio" in reply.reason
    assert logic.stats["probes"] == 0


def test_clip_shortens_and_escapes_peer_text():
    assert limits.clip("\0" * 17_000_000) == "\\x00" * limits.CLIP + "... (17000000 characters)"
    assert limits.clip("plain") == "plain"
    assert limits.clip(b"\xff") == "b'\\xff'"


def test_unsent_limit_allows_four_frames_at_least():
    assert limits.unsent_limit(1 << 20) == limits.MIN_UNSENT_LIMIT
    assert limits.unsent_limit(64 << 20) == 256 << 20


def test_heartbeat_and_enqueue_defaults_decode():
    """Messages this side sends itself stay inside the limits (an echo, a reservation message)."""
    for msg in (
        Heartbeat(),
        EnqueueReservations(2**40, NAME_OK, -5, 3),
        GetTask(0),
        OutcomeToScheduler(1, 2, Outcome(False, b"", "e")),
    ):
        assert FrameDecoder().feed(bytes(encode_frames([msg]))) == [msg]


def test_the_wire_priority_limits_are_the_kernels_range():
    """limits.py cannot import the kernel (an executor worker imports it without numpy): its priority
    bounds must stay sparrow_core.PRIORITY_RANGE's."""
    import sparrow_core

    assert range(limits.PRIORITY_MIN, limits.PRIORITY_MAX + 1) == sparrow_core.PRIORITY_RANGE
