"""NodeMonitorLogic (sans-I/O): slots, queue policies, GetTask / NoTask / launch cycle, no network.
"Design scenario" tests follow the scenarios listed in docs/design.md."""

import re
from collections import Counter

import pytest

from sparrow_runtime.errors import ProtocolError, RegistrationRefused
from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic, Stop
from sparrow_runtime.wire.limits import MESSAGE_OVERHEAD
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import (
    CANCELLED,
    TIMED_OUT,
    TOO_LARGE,
    CancelReservations,
    EnqueueReservations,
    Error,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToScheduler,
    Registered,
    RegisterNodeMonitor,
    StopTask,
    TaskToNode,
)
from sparrow_runtime.wire.messages import RegistrationRefused as RegistrationRefusedMsg


def node(slots, policy="fifo", weights=None, schedulers=("s",)):
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, policy=policy, weights=weights or {}, pipeline="off")
    )  # the queues alone
    for s in schedulers:
        logic.on_scheduler_registered(s)
    return logic


def asked(out):
    return [msg.job_id for _, msg in out if type(msg) is GetTask]


def launch_all(logic, out, sched="s"):
    """Answer every GetTask in `out` with a launch; returns the job ids launched, in order."""
    jobs = asked(out)
    for job in jobs:
        launched = logic.on_scheduler_messages(sched, [TaskToNode(job, 0, b"")])
        assert launched[0] == (sched, TaskToNode(job, 0, b""))
    return jobs


def finish_one(logic, job, sched="s"):
    """Finish a task of `job`; returns the job ids the node monitor asks for next."""
    out = logic.on_task_done(sched, job, 0, Outcome(True, b"", ""))
    assert out[0] == (sched, OutcomeToScheduler(job, 0, Outcome(True, b"")))
    return launch_all(logic, out[1:], sched)


def test_fifo_runs_what_fits_and_releases_in_arrival_order():
    """Design scenario: 4 slots, 3 busy; a 3-task reservation runs one and queues two, released in order."""
    logic = node(4)
    busy = launch_all(logic, logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)]))
    assert busy == [1, 1, 1]
    out = logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 3)])
    assert launch_all(logic, out) == [2]
    logic.on_scheduler_messages("s", [EnqueueReservations(3, "u", 0, 1)])
    assert [finish_one(logic, 1) for _ in range(3)] == [[2], [2], [3]]


def test_priority_serves_lower_numbers_first():
    """Design scenario: 4 slots, 5 tasks at priority 2 (4 running), then 2 at 1 and 1 at 0: release 0, 1, 1, 2."""
    logic = node(4, "priority")
    assert launch_all(logic, logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 2, 5)])) == [2] * 4
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 1, 2), EnqueueReservations(0, "u", 0, 1)])
    assert [finish_one(logic, 2) for _ in range(4)] == [[0], [1], [1], [2]]


def test_round_robin_between_users():
    """Design scenario: 4 slots busy, backlogs user1={5,5}, user2={6,7,8}, user3={9,9,9,9}: 5,6,9,5,7,9,8,9,9."""
    logic = node(4, "fair")
    launch_all(logic, logic.on_scheduler_messages("s", [EnqueueReservations(1, "u0", 0, 4)]))
    logic.on_scheduler_messages(
        "s",
        [EnqueueReservations(5, "user1", 0, 2)]
        + [EnqueueReservations(j, "user2", 0, 1) for j in (6, 7, 8)]
        + [EnqueueReservations(9, "user3", 0, 4)],
    )
    order = [finish_one(logic, 1)[0] for _ in range(4)]
    for running in range(5):  # finish the tasks started above, in the order they started
        order += finish_one(logic, order[running])
    assert order == [5, 6, 9, 5, 7, 9, 8, 9, 9]


def test_fair_weights_3_to_1_share_pops():
    logic = node(1, "fair", weights={"a": 3, "b": 1})
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "a", 0, 100), EnqueueReservations(2, "b", 0, 100)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])  # answer the first GetTask
    served = Counter()
    job = 1
    for _ in range(80):
        (nxt,) = finish_one(logic, job)
        served[nxt] += 1
        job = nxt
    assert served == Counter({1: 60, 2: 20})


def test_empty_answer_asks_the_next_reservation_at_once_and_keeps_the_users_turn():
    logic = node(1, "fair")
    out = logic.on_scheduler_messages(
        "s", [EnqueueReservations(1, "a", 0, 1), EnqueueReservations(2, "b", 0, 1), EnqueueReservations(3, "a", 0, 1)]
    )
    assert asked(out) == [1]
    assert asked(logic.on_scheduler_messages("s", [NoTask(1)])) == [3]  # user a keeps its turn
    assert logic.free == 0 and logic.stats["no_task"] == 1


def test_cancel_removes_queued_reservations_by_job_id():
    logic = node(1)
    out = logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3), EnqueueReservations(2, "u", 0, 1)])
    assert asked(out) == [1]
    logic.on_scheduler_messages("s", [CancelReservations(1)])
    assert logic.stats["cancelled"] == 2 and len(logic.queue) == 1
    assert asked(logic.on_scheduler_messages("s", [NoTask(1)])) == [2]


def test_lost_scheduler_frees_the_slots_waiting_on_it():
    logic = node(2, schedulers=("s1", "s2"))
    assert asked(logic.on_scheduler_messages("s1", [EnqueueReservations(1, "u", 0, 2)])) == [1, 1]
    logic.on_scheduler_messages("s2", [EnqueueReservations(1, "u", 0, 1)])  # same job id, other scheduler
    out = logic.on_scheduler_lost("s1")
    assert out == [("s2", GetTask(1))] and logic.free == 1
    assert logic.on_task_done("s1", 1, 0, Outcome(True, b"", "")) == []  # nobody to report to; slot freed
    assert logic.free == 2


@pytest.mark.parametrize(
    "msg, match",
    [
        (NoTask(4), "did not ask"),
        (TaskToNode(4, 0, b""), "did not ask"),
        (GetTask(1), "not allowed from a scheduler"),
    ],
)
def test_scheduler_protocol_violations_are_answered_with_error(msg, match):
    """A message a scheduler may not send is answered with Error (which closes the link)."""
    out = node(1).on_scheduler_messages("s", [msg])
    assert len(out) == 1 and out[0][0] == "s" and type(out[0][1]) is Error
    assert re.search(match, out[0][1].reason)


def test_unregistered_scheduler_is_answered_with_error():
    out = node(1).on_scheduler_messages("stranger", [EnqueueReservations(1, "u", 0, 1)])
    assert [(peer, type(msg)) for peer, msg in out] == [("stranger", Error)] and "not registered" in out[0][1].reason


def test_a_launch_before_a_bad_answer_in_one_batch_still_runs_and_frees_its_slot():
    """[TaskToNode, NoTask] in one read (the NoTask answers nothing): the launch keeps its effect and
    output, the violation closes the link, and the slot comes back when the task ends (not leaked)."""
    logic = node(1)
    assert asked(logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])) == [1]
    out = logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"p"), NoTask(1)])
    assert out[0] == ("s", TaskToNode(1, 0, b"p")) and type(out[1][1]) is Error and len(out) == 2
    assert logic.free == 0
    logic.on_scheduler_lost("s")
    assert logic.on_task_done("s", 1, 0, Outcome(True, b"", "")) == [] and logic.free == 1


def test_messages_after_a_violation_in_the_batch_are_not_handled():
    logic = node(2)
    out = logic.on_scheduler_messages("s", [GetTask(9), EnqueueReservations(1, "u", 0, 2)])
    assert [type(msg) for _, msg in out] == [Error] and len(logic.queue) == 0


def test_reservations_past_the_node_limit_close_the_link_and_queue_nothing(monkeypatch):
    monkeypatch.setattr("sparrow_runtime.services.node_monitor_logic.MAX_QUEUED_RESERVATIONS", 5)
    logic = node(1)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)])  # 1 asked, 2 queued
    assert len(logic.queue) == 2
    out = logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 3), EnqueueReservations(3, "u", 0, 4)])
    assert [type(msg) for _, msg in out] == [Error] and "over the limit of 5" in out[0][1].reason
    assert len(logic.queue) == 5


def test_a_job_of_many_reservations_is_pushed_in_one_batch_call():
    """EnqueueReservations(count=k) makes one queue call, not k (a count near the limit is cheap)."""
    logic = node(1)
    calls = []
    real_push = logic.queue.push

    class Spy:
        def __getattr__(self, name):
            return getattr(real_queue, name)

        def push(self, *args, **kwargs):
            calls.append((args, kwargs))
            return real_push(*args, **kwargs)

        def __len__(self):
            return len(real_queue)

        def __bool__(self):
            return bool(len(real_queue))

    real_queue, logic.queue = logic.queue, Spy()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 100_000)])
    assert len(calls) == 1 and len(real_queue) == 100_000 - 1  # one popped for the free slot


def test_priorities_at_both_ends_of_the_kernel_range_are_served_lowest_first():
    """The kernel's whole PRIORITY_RANGE is accepted, INT32_MIN included (once refused here), and served
    in priority order."""
    logic = node(1, "priority")
    busy = launch_all(logic, logic.on_scheduler_messages("s", [EnqueueReservations(9, "u", 0, 1)]))
    low, high = -(2**31), 2**31 - 1
    queued = [EnqueueReservations(1, "u", high, 1), EnqueueReservations(2, "u", low, 1)]
    assert logic.on_scheduler_messages("s", queued) == []
    assert finish_one(logic, busy[0]) == [2]
    assert finish_one(logic, 2) == [1]


def test_bad_configuration_is_named():
    with pytest.raises(ValueError, match="slots"):
        NodeMonitorLogic(NodeMonitorConfig(slots=0))
    with pytest.raises(ValueError, match="policy"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, policy="lifo"))


# -- registration, timers and outcome clipping (decisions the shell used to keep) -----------------


def test_registration_says_who_this_node_monitor_is():
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=3))
    assert logic.registration("nm", ["gpu"], "i-1", True) == RegisterNodeMonitor("nm", 3, ("gpu",), "i-1", True)


def test_a_registered_reply_takes_the_scheduler_on():
    """Registered: the scheduler's messages are served from now on (before, they are an Error)."""
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1))
    assert type(logic.on_scheduler_messages("s", [NoTask(1)])[0][1]) is Error
    assert logic.on_registration_reply("s", Registered("s")) == []
    assert asked(logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])) == [1]


def test_a_draining_node_monitor_tells_a_new_scheduler_at_once():
    """Registered while draining: a Heartbeat with `draining` goes right after, so the scheduler never
    probes it, not even for one heartbeat interval."""
    logic = node(1)
    logic.drain()
    assert logic.on_registration_reply("s2", Registered("s2")) == [("s2", Heartbeat(0, 0, True))]


def test_a_refused_registration_stops_the_node_monitor_with_the_reason():
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1))
    with pytest.raises(RegistrationRefused, match=r"^sched-a refused this node monitor: id nm is live"):
        logic.on_registration_reply("s", RegistrationRefusedMsg("id nm is live elsewhere"), "sched-a")
    assert logic.on_scheduler_messages("s", [NoTask(1)])[0][1].reason.startswith("message from a scheduler")


@pytest.mark.parametrize(
    "reply, reason", [(Error("bad secret"), "sched-a refused: bad secret"), (Heartbeat(), "sched-a answered Heartbeat")]
)
def test_any_other_reply_to_a_registration_is_a_protocol_error(reply, reason):
    """An Error or an unexpected message: the shell closes that link and redials (ProtocolError)."""
    with pytest.raises(ProtocolError, match=f"^{reason}$"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1)).on_registration_reply("s", reply, "sched-a")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _launched_with_timeout(clock: Clock, timeout: float, job: int = 1) -> NodeMonitorLogic:
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=2), clock=clock)
    logic.on_scheduler_registered("s")
    assert asked(logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 1)])) == [job]
    logic.on_scheduler_messages("s", [TaskToNode(job, 0, b"", timeout)])
    return logic


def test_a_task_past_its_timeout_is_stopped_once():
    """Launched at t=0 with a 2 s timeout: nothing at 1.99 s, one TIMED_OUT Stop at 2 s, none after."""
    clock = Clock()
    logic = _launched_with_timeout(clock, 2.0)
    clock.now = 1.99
    assert logic.on_timer() == []
    clock.now = 2.0
    reason = "the task ran past its job's timeout of 2 s and was stopped"
    assert logic.on_timer() == [("s", Stop(1, 0, TIMED_OUT, reason))]
    clock.now = 5.0
    assert logic.on_timer() == [] and not logic.deadlines


def test_a_task_that_ends_in_time_is_never_stopped():
    clock = Clock()
    logic = _launched_with_timeout(clock, 2.0)
    clock.now = 1.0
    logic.on_task_done("s", 1, 0, Outcome(True, b"v"))
    clock.now = 3.0
    assert logic.on_timer() == [] and not logic.deadlines


def test_a_task_without_a_timeout_has_no_timer():
    logic = _launched_with_timeout(Clock(), 0.0)
    assert not logic.deadlines


def test_a_task_whose_scheduler_is_gone_is_still_stopped_at_its_timeout():
    """Its worker is still busy: the timer outlives the link, so the slot is not held forever."""
    clock = Clock()
    logic = _launched_with_timeout(clock, 1.0)
    logic.on_scheduler_lost("s")
    clock.now = 1.0
    assert [type(m) for _, m in logic.on_timer()] == [Stop]


def test_a_forced_cancel_becomes_a_stop_for_the_executor():
    logic = _launched_with_timeout(Clock(), 0.0)
    reason = "cancelled by its client with force: its worker was stopped"
    assert logic.on_scheduler_messages("s", [StopTask(1, 0)]) == [("s", Stop(1, 0, CANCELLED, reason))]


def test_an_outcome_too_large_for_a_frame_is_reported_as_a_failure_of_the_task():
    """Over the link's limit (the smaller of max_frame and the scheduler's, 4096 here) less the
    message's overhead: a TOO_LARGE failure naming the size and the limit goes instead (not retried);
    one that fits goes as is."""
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, link=LinkConfig(max_frame=8192)))
    logic.on_scheduler_registered("s", 4096)
    fits = Outcome(True, b"x" * (4096 - MESSAGE_OVERHEAD))
    assert logic.on_task_done("s", 1, 0, fits) == [("s", OutcomeToScheduler(1, 0, fits))]
    (_, sent), *_ = logic.on_task_done("s", 1, 1, Outcome(True, b"x" * (4096 - MESSAGE_OVERHEAD + 1)))
    reason = "the task's outcome of 3073 bytes is over the frame limit of 4096 bytes of the link to its scheduler"
    assert sent.outcome == Outcome(False, b"", reason, TOO_LARGE)
    assert logic.stats["outcomes_too_large"] == 1
