"""SchedulerLogic (sans-I/O): probing, late binding, cancellation, constraints and failures, no network.
"Design scenario" tests follow the scenarios listed in docs/design.md."""

from collections import Counter

import pytest

from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.framing import DEFAULT_MAX_FRAME
from sparrow_runtime.wire.messages import (
    SYSTEM,
    TOO_LARGE,
    UNPLACEABLE,
    CancelReservations,
    Constraint,
    EnqueueReservations,
    Error,
    GetTask,
    Heartbeat,
    JobAccepted,
    JobRejected,
    NoTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    Registered,
    RegisterNodeMonitor,
    RegistrationRefused,
    SubmitJob,
    TaskToNode,
)


def cluster(n_nodes, labels=None, bind_idle=False, **kw):
    """Node monitors nm0, nm1, ... of one slot each (labels[i] each), under plain late binding unless
    `bind_idle` (its own tests: test_scheduler_bind_idle.py)."""
    logic = SchedulerLogic(seed=7, bind_idle=bind_idle, **kw)
    for i in range(n_nodes):
        reg = RegisterNodeMonitor(f"nm{i}", 1, tuple(labels[i]) if labels else (), instance=f"process-{i}")
        out = logic.on_node_messages(f"nm{i}", [reg])
        assert out == [(f"nm{i}", Registered(logic.scheduler_id))]
    return logic


def of_type(out, kind):
    return [(peer, msg) for peer, msg in out if type(msg) is kind]


def reservations(out):
    return Counter({peer: msg.count for peer, msg in of_type(out, EnqueueReservations)})


def submit(logic, n_tasks, client="c", ref=1, **kw):
    return logic.on_client_messages(client, [SubmitJob(ref, [b"t%d" % i for i in range(n_tasks)], **kw)])


def test_two_tasks_at_ratio_1_5_probe_three_distinct_node_monitors():
    """Design scenario: 6 workers, 2 tasks, d = 1.5: 3 reservations on 3 distinct workers, with job id and user."""
    logic = cluster(6)
    out = submit(logic, 2, user="alice", probe_ratio=1.5)
    assert out[0] == ("c", JobAccepted(1, 1))
    sent = of_type(out, EnqueueReservations)
    assert len(sent) == 3 and len({peer for peer, _ in sent}) == 3
    assert all(msg.count == 1 and msg.job_id == 1 and msg.user == "alice" for _, msg in sent)


def test_one_message_per_node_monitor_per_job():
    """Design scenario: 14 tasks, d = 2, 6 workers: 28 reservations, every worker 4 or 5, one message each."""
    logic = cluster(6)
    out = submit(logic, 14)
    sent = of_type(out, EnqueueReservations)
    assert len(sent) == 6 and len({peer for peer, _ in sent}) == 6
    assert sum(msg.count for _, msg in sent) == 28
    assert {msg.count for _, msg in sent} <= {4, 5}


def test_late_binding_then_cancellation_of_leftovers():
    """The first m get_tasks launch m distinct tasks; then exactly the holders of leftovers are cancelled."""
    logic = cluster(4)
    held = reservations(submit(logic, 3))
    assert sum(held.values()) == 6
    launched, cancels = [], []
    asked = Counter()
    for peer in sorted(held):
        for _ in range(held[peer]):
            if len(launched) == 3:
                break
            asked[peer] += 1
            out = logic.on_node_messages(peer, [GetTask(1)])
            launched += [msg.task for _, msg in of_type(out, TaskToNode)]
            cancels += [p for p, _ in of_type(out, CancelReservations)]
    assert sorted(launched) == [0, 1, 2]
    assert sorted(cancels) == sorted(p for p in held if held[p] > asked[p])
    out = logic.on_node_messages(cancels[0], [GetTask(1)])  # a GetTask that crossed the cancel
    assert out == [(cancels[0], NoTask(1))]


def test_outcomes_are_relayed_once_to_the_submitting_client():
    logic = cluster(1)
    submit(logic, 1, client="alice", ref=9)
    submit(logic, 1, client="bob", ref=4)
    out = logic.on_node_messages("nm0", [GetTask(1), GetTask(2)])
    assert [msg.payload for _, msg in of_type(out, TaskToNode)] == [b"t0", b"t0"]
    out = logic.on_node_messages(
        "nm0", [OutcomeToScheduler(2, 0, Outcome(True, b"B")), OutcomeToScheduler(1, 0, Outcome(False, b"", "boom"))]
    )
    # each job's only task: its last outcome, so no scheduler holds it back for a shared write
    assert out == [
        ("bob", OutcomeToClient(4, 0, Outcome(True, b"B"), last=True)),
        ("alice", OutcomeToClient(9, 0, Outcome(False, b"", "boom"), last=True)),
    ]
    assert logic.on_node_messages("nm0", [OutcomeToScheduler(1, 0, Outcome(True, b"again"))]) == []  # duplicate ignored
    assert not logic.jobs and len(logic.table) == 0


def test_lost_node_monitor_fails_its_running_task_and_reprobes_the_rest():
    """Exactly one outcome per task: the running one fails, the unlaunched ones are probed elsewhere."""
    logic = cluster(2, placement_timeout=0)
    held = reservations(submit(logic, 2, probe_ratio=1.0))
    assert held == Counter({"nm0": 1, "nm1": 1})
    logic.on_node_messages("nm0", [GetTask(1)])  # task 0 runs on nm0
    out = logic.on_node_lost("nm0")
    lost = OutcomeToClient(
        1, 0, Outcome(False, b"", "node monitor 'nm0' was lost while running the task", failure=SYSTEM)
    )
    assert of_type(out, OutcomeToClient) == [("c", lost)]
    assert of_type(out, EnqueueReservations) == []  # nm1 still holds a reservation: no re-probe needed
    out = logic.on_node_lost("nm1")
    # nm1's reservation is lost too and nobody is left: with no placement wait, the last task fails at once
    unplaced = OutcomeToClient(1, 1, Outcome(False, b"", "no live node monitor", failure=UNPLACEABLE), last=True)
    assert of_type(out, OutcomeToClient) == [("c", unplaced)]
    assert logic.on_node_messages("nm2", [RegisterNodeMonitor("nm2", 1)])  # late outcome from nm0 is ignored
    assert not logic.jobs


def test_job_whose_reservations_are_all_lost_is_reprobed():
    logic = cluster(3)
    held = reservations(submit(logic, 1, probe_ratio=1.0))
    (holder,) = held
    out = logic.on_node_lost(holder)
    (again,) = of_type(out, EnqueueReservations)
    assert again[0] != holder and logic.stats["reprobes"] == 1
    out = logic.on_node_messages(again[0], [GetTask(1)])
    assert of_type(out, TaskToNode)


def test_job_left_without_reservations_by_a_launch_is_reprobed():
    """2 tasks, d = 1: one holder is lost, the other launches a task with the job's last reservation; the
    task left over is probed again instead of waiting forever."""
    logic = cluster(3)
    held = reservations(submit(logic, 2, probe_ratio=1.0))
    lost, kept = sorted(held)
    logic.on_node_lost(lost)
    out = logic.on_node_messages(kept, [GetTask(1)])
    assert [msg.task for _, msg in of_type(out, TaskToNode)] == [0]
    assert sum(reservations(out).values()) == 1 and logic.stats["reprobes"] == 1


def test_reconnecting_node_monitor_replaces_its_stale_connection():
    logic = cluster(1)
    held = reservations(submit(logic, 1))
    assert held == Counter({"nm0": 2})
    out = logic.on_node_messages("nm0-again", [RegisterNodeMonitor("nm0", 1, instance="process-0")])
    assert of_type(out, EnqueueReservations) == [("nm0-again", EnqueueReservations(1, "", 0, 2))]


@pytest.mark.parametrize("instance", ["another-process", ""])
def test_a_second_node_monitor_under_a_live_id_is_refused_and_the_first_keeps_its_work(instance):
    """Two processes with one id (clones share a host name) no longer replace each other forever: the
    newcomer is refused with a reason naming the id and --id; the live one is untouched."""
    logic = cluster(1)
    held = reservations(submit(logic, 1))
    out = logic.on_node_messages("clone", [RegisterNodeMonitor("nm0", 1, instance=instance), GetTask(1)])
    assert [(peer, type(msg)) for peer, msg in out] == [("clone", RegistrationRefused)]
    assert "'nm0' is already registered" in out[0][1].reason and "--id" in out[0][1].reason
    assert "clone" not in logic.nodes and held == Counter({"nm0": 2})
    assert of_type(logic.on_node_messages("nm0", [GetTask(1)]), TaskToNode)  # the first still works


def test_job_constraint_by_label_and_by_node_monitor():
    logic = cluster(4, labels=[["gpu"], [], ["gpu", "big"], []], placement_timeout=0)
    held = reservations(submit(logic, 10, constraint=Constraint(labels=("gpu",))))
    assert set(held) == {"nm0", "nm2"}
    held = reservations(submit(logic, 10, ref=2, constraint=Constraint(node_monitors=("nm3",))))
    assert set(held) == {"nm3"}
    out = submit(logic, 2, ref=3, constraint=Constraint(labels=("tpu",)))
    assert [msg.outcome.error for _, msg in of_type(out, OutcomeToClient)] == [
        "no live node monitor satisfies the job's constraint"
    ] * 2


def test_per_task_constraints_only_launch_where_allowed():
    """Design scenario: one task with 3 preferred workers, d = 2: 2 reservations, both on preferred workers."""
    logic = cluster(5)
    pref = Constraint(node_monitors=("nm1", "nm2", "nm3"))
    held = reservations(submit(logic, 1, task_constraints=[pref]))
    assert sum(held.values()) == 2 and set(held) <= {"nm1", "nm2", "nm3"}
    # mixed: the constrained task only ever launches on nm4
    only4 = Constraint(node_monitors=("nm4",))
    held = reservations(submit(logic, 3, ref=2, task_constraints=[only4, None, None]))
    launched = {}
    for peer in sorted(held, key=lambda p: p != "nm4"):
        for _ in range(held[peer]):
            for _, msg in of_type(logic.on_node_messages(peer, [GetTask(2)]), TaskToNode):
                launched[msg.task] = peer
    assert sorted(launched) == [0, 1, 2] and launched[0] == "nm4"
    out = submit(logic, 2, ref=3, task_constraints=[None, Constraint(labels=("x",))])
    assert [msg.task for _, msg in of_type(out, OutcomeToClient)] == [0, 1]  # unplaceable: fails, never hangs


def test_job_constraint_holds_alongside_per_task_constraints():
    """labels=("gpu",) on 2 of 8 node monitors plus per-task constraints: every reservation lands on a gpu
    node monitor, and the constrained task launches only where both constraints hold."""
    gpu = {"nm2", "nm5"}
    logic = cluster(8, labels=[["gpu"] if f"nm{i}" in gpu else [] for i in range(8)])
    on_gpu = {
        "constraint": Constraint(labels=("gpu",)),
        "task_constraints": [
            Constraint(node_monitors=("nm0", "nm5", "nm7")),
            None,
            None,
            None,
            Constraint(labels=("gpu",)),
        ],
    }
    for ref in range(1, 21):
        held = reservations(submit(logic, 5, ref=ref, **on_gpu))
        assert sum(held.values()) == 10 and set(held) <= gpu
    held = reservations(submit(logic, 5, ref=21, **on_gpu))
    launched = {}
    for peer in sorted(held, key=lambda p: p != "nm2"):  # nm2 asks first: it must not get task 0
        for _ in range(held[peer]):
            for _, msg in of_type(logic.on_node_messages(peer, [GetTask(21)]), TaskToNode):
                launched[msg.task] = peer
    assert sorted(launched) == [0, 1, 2, 3, 4] and launched[0] == "nm5"


def test_reprobe_of_unconstrained_tasks_stays_inside_the_job_constraint():
    """A mixed job that lost a reservation and launched a task is probed again for the rest: on gpu only."""
    logic = cluster(8, labels=[["gpu"] if i in (2, 5) else [] for i in range(8)])
    task_constraints = [Constraint(node_monitors=("nm0", "nm2", "nm5")), None]
    held = reservations(
        submit(logic, 2, constraint=Constraint(labels=("gpu",)), task_constraints=task_constraints, probe_ratio=1.0)
    )
    assert held == Counter({"nm2": 1, "nm5": 1})
    logic.on_node_lost("nm2")  # its reservation is dropped; nm5 still holds one
    out = logic.on_node_messages("nm5", [GetTask(1)])
    assert [msg.task for _, msg in of_type(out, TaskToNode)] == [0]
    assert reservations(out) == Counter({"nm5": 1}) and logic.stats["reprobes"] == 1


def test_task_with_no_node_monitor_in_both_constraints_fails_the_job_and_the_scheduler_goes_on():
    """A task constraint that no node monitor satisfying the job's constraint meets: the job's tasks end
    with a reason naming the task, nothing is reserved, and the next job is scheduled as usual."""
    logic = cluster(4, labels=[["gpu"], ["gpu"], [], []])
    only_nm3 = Constraint(node_monitors=("nm3",))
    out = submit(logic, 3, constraint=Constraint(labels=("gpu",)), task_constraints=[None, only_nm3, None])
    assert of_type(out, EnqueueReservations) == []
    results = [msg for _, msg in of_type(out, OutcomeToClient)]
    assert [r.task for r in results] == [0, 1, 2] and results[-1].last
    assert {r.outcome.error for r in results} == {
        "no live node monitor satisfies the constraint of task 1 and the job's"
    }
    assert not logic.jobs and len(logic.table) == 0
    held = reservations(submit(logic, 2, ref=2, constraint=Constraint(labels=("gpu",))))
    assert sum(held.values()) == 4 and set(held) <= {"nm0", "nm1"}


def test_invalid_jobs_are_rejected_and_change_nothing():
    logic = cluster(2)
    for bad, why in [
        (SubmitJob(1, []), "at least one task"),
        (SubmitJob(2, [b"x"], probe_ratio=0.5), "probe_ratio"),
        (SubmitJob(3, [b"x"], priority=2**40), "priority"),
        (SubmitJob(5, [b"x"], priority=2**31), "priority"),
        (SubmitJob(4, [b"x"], task_constraints=[None, None]), "task_constraints"),
    ]:
        ((_, msg),) = logic.on_client_messages("c", [bad])
        assert isinstance(msg, JobRejected) and why in msg.reason
    assert not logic.jobs and len(logic.table) == 0


def test_priorities_at_both_ends_of_the_kernel_range_are_accepted():
    """A job at INT32_MIN or INT32_MAX (sparrow_core.PRIORITY_RANGE) is accepted and reserved with it."""
    logic = cluster(2)
    for ref, priority in ((1, -(2**31)), (2, 2**31 - 1)):
        out = submit(logic, 1, ref=ref, priority=priority)
        assert of_type(out, JobAccepted) and {msg.priority for _, msg in of_type(out, EnqueueReservations)} == {
            priority
        }


def test_client_lost_cancels_its_reservations():
    logic = cluster(3)
    held = reservations(submit(logic, 5))
    out = logic.on_client_lost("c")
    assert sorted(p for p, _ in of_type(out, CancelReservations)) == sorted(held)
    assert not logic.jobs and len(logic.table) == 0
    assert logic.on_node_messages("nm0", [GetTask(1)]) == [("nm0", NoTask(1))]


@pytest.mark.parametrize(
    "peer_kind, msgs, match",
    [
        ("node", [GetTask(1)], "before RegisterNodeMonitor"),
        ("registered", [SubmitJob(1, [b"x"])], "not allowed from a registered node monitor"),
        ("client", [GetTask(1)], "not allowed from a client"),
    ],
)
def test_messages_out_of_place_are_answered_with_error(peer_kind, msgs, match):
    """A message out of place gets Error (which closes that link), naming what was wrong."""
    logic = cluster(1)
    peer = {"client": "c", "registered": "nm0", "node": "new"}[peer_kind]
    handle = logic.on_client_messages if peer_kind == "client" else logic.on_node_messages
    out = handle(peer, msgs)
    assert [(p, type(m)) for p, m in out] == [(peer, Error)] and match in out[0][1].reason


def test_outcomes_before_a_bad_message_in_a_batch_are_kept():
    """A node monitor's batch [OutcomeToScheduler, bad message]: the outcome reaches the client (it was
    dropped with the whole batch before), then the link is answered with Error."""
    logic = cluster(1)
    submit(logic, 1)
    logic.on_node_messages("nm0", [GetTask(1)])
    out = logic.on_node_messages("nm0", [OutcomeToScheduler(1, 0, Outcome(True, b"r")), SubmitJob(2, [b"x"])])
    assert out[0] == ("c", OutcomeToClient(1, 0, Outcome(True, b"r"), last=True)) and type(out[1][1]) is Error
    assert logic.on_node_lost("nm0") == []  # nothing left to fail: exactly one outcome


def test_heartbeat_is_echoed():
    logic = cluster(1)
    assert logic.on_node_messages("nm0", [Heartbeat()]) == [("nm0", Heartbeat())]


KIB = 1024


def cluster_with_limits(limits, **kw):
    """Node monitors nm0, nm1, ... whose links take frames of `limits[i]` bytes (set, as the shell does,
    before each registers), on a fake clock."""
    logic = SchedulerLogic(seed=7, clock=lambda: 0.0, bind_idle=False, **kw)
    for i, limit in enumerate(limits):
        logic.frame_limits[f"nm{i}"] = limit
        logic.on_node_messages(f"nm{i}", [RegisterNodeMonitor(f"nm{i}", 1, (), instance=f"process-{i}")])
    return logic


def serve_all(logic, out):
    """Answer every reservation in `out` (and the re-probes that follow) with GetTask until none is left;
    the (node monitor, TaskToNode) launches and every message sent meanwhile."""
    sent, launched = list(out), []
    todo = [(peer, msg.job_id) for peer, msg in of_type(out, EnqueueReservations) for _ in range(msg.count)]
    while todo:
        peer, job_id = todo.pop(0)
        got = logic.on_node_messages(peer, [GetTask(job_id)])
        sent += got
        launched += of_type(got, TaskToNode)
        todo += [(p, m.job_id) for p, m in of_type(got, EnqueueReservations) for _ in range(m.count)]
    return launched, sent


def test_a_node_monitor_telling_a_small_limit_gets_no_reservation_for_a_task_it_cannot_take():
    """nm0 told 64 KiB (a liar, or misconfigured), nm1 and nm2 the default: a job with a 100 KiB task is
    probed on nm1 and nm2 only, and every task runs; nothing fails TOO_LARGE."""
    logic = cluster_with_limits([64 * KIB, DEFAULT_MAX_FRAME, DEFAULT_MAX_FRAME])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"x" * (100 * KIB)] + [b"y"] * 5)])
    assert set(reservations(out)) == {"nm1", "nm2"}
    launched, sent = serve_all(logic, out)
    assert sorted(msg.task for _, msg in launched) == list(range(6))
    assert {peer for peer, _ in launched} <= {"nm1", "nm2"}
    assert not [m for _, m in of_type(sent, OutcomeToClient) if not m.outcome.ok]
    assert logic.stats["too_large"] == 0


def test_small_tasks_still_go_to_a_node_monitor_with_a_small_limit():
    """The same cluster: a job of small tasks is probed on all three, nm0 among them (its limit is no
    reason to leave it idle)."""
    logic = cluster_with_limits([64 * KIB, DEFAULT_MAX_FRAME, DEFAULT_MAX_FRAME])
    out = submit(logic, 12)
    assert set(reservations(out)) == {"nm0", "nm1", "nm2"}
    launched, _ = serve_all(logic, out)
    assert sorted(msg.task for _, msg in launched) == list(range(12))


def test_a_task_too_large_for_every_node_monitor_fails_alone_at_once():
    """Every node monitor takes 64 KiB: a 100 KiB task fails TOO_LARGE at submission, naming its size and
    the largest limit, without a reservation made for it; its small sibling runs."""
    logic = cluster_with_limits([64 * KIB, 64 * KIB])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"x" * (100 * KIB), b"y"])])
    (failed,) = [msg for _, msg in of_type(out, OutcomeToClient)]
    assert failed.task == 0 and failed.outcome.failure == TOO_LARGE and not failed.last
    assert (
        "payload of 102400 bytes is over the frame limit of 65536 bytes of every node monitor" in failed.outcome.error
    )
    assert sum(reservations(out).values()) == 2  # d = 2 for the one task left
    launched, _ = serve_all(logic, out)
    assert [msg.task for _, msg in launched] == [1]
    assert logic.stats["too_large"] == 1


def test_a_job_of_only_too_large_tasks_ends_at_once():
    """Both tasks are too large for every node monitor: each fails once, the job ends, nothing is probed."""
    logic = cluster_with_limits([64 * KIB])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"x" * (100 * KIB)] * 2)])
    outcomes = [msg for _, msg in of_type(out, OutcomeToClient)]
    assert [(m.task, m.outcome.failure, m.last) for m in outcomes] == [(0, TOO_LARGE, False), (1, TOO_LARGE, True)]
    assert not of_type(out, EnqueueReservations) and not logic.jobs and not len(logic.table)


def test_a_big_task_fails_too_large_only_once_the_last_node_monitor_that_fits_is_lost():
    """nm0 takes 64 KiB, nm1 the default: the 100 KiB task is reserved at nm1 only. nm1 is lost before it
    asks: the re-probe finds no node monitor that fits, so the task fails TOO_LARGE (one outcome), not
    hands it to nm0."""
    logic = cluster_with_limits([64 * KIB, DEFAULT_MAX_FRAME])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"x" * (100 * KIB)])])
    assert set(reservations(out)) == {"nm1"}
    lost = logic.on_node_lost("nm1")
    assert not of_type(lost, EnqueueReservations)
    (failed,) = [msg for _, msg in of_type(lost, OutcomeToClient)]
    assert failed.outcome.failure == TOO_LARGE and failed.last
    assert logic.on_node_messages("nm0", [GetTask(1)]) == [("nm0", NoTask(1))]


def test_a_constrained_task_whose_candidates_are_all_too_small_says_so():
    """A task constrained to nm0 alone, whose link takes 64 KiB, with a 100 KiB payload beside a task
    that fits: the job is abandoned with a reason naming both the constraint and the frame size."""
    logic = cluster_with_limits([64 * KIB, DEFAULT_MAX_FRAME])
    only_nm0 = Constraint(node_monitors=("nm0",))
    msg = SubmitJob(1, [b"x" * (100 * KIB), b"y"], task_constraints=[None, only_nm0])
    out = logic.on_client_messages("c", [msg])
    failures = {m.task: m.outcome for _, m in of_type(out, OutcomeToClient)}
    assert "constraint of task 1" in failures[1].error and "frames of" in failures[1].error


def test_an_outcome_over_its_clients_frame_limit_fails_alone_once():
    """The client takes frames of 4096 bytes: a 5000-byte outcome reaches it as a TOO_LARGE failure
    naming the size and the limit; a small one as it is."""
    logic = cluster(1)
    logic.frame_limits["c"] = 4096
    out = submit(logic, 2)
    (job_id,) = {msg.job_id for _, msg in of_type(out, EnqueueReservations)}
    launched = of_type(logic.on_node_messages("nm0", [GetTask(job_id), GetTask(job_id)]), TaskToNode)
    done = [
        OutcomeToScheduler(job_id, launched[0][1].task, Outcome(True, b"r" * 5000)),
        OutcomeToScheduler(job_id, launched[1][1].task, Outcome(True, b"ok")),
    ]
    results = {msg.task: msg.outcome for _, msg in of_type(logic.on_node_messages("nm0", done), OutcomeToClient)}
    big, small = results[launched[0][1].task], results[launched[1][1].task]
    assert not big.ok and big.failure == TOO_LARGE and big.payload == b""
    assert "outcome of 5000 bytes is over the frame limit of 4096 bytes of the link to its client" in big.error
    assert small.ok and small.payload == b"ok"


def test_a_link_silent_since_the_schedulers_own_pause_is_not_taken_for_live():
    """The scheduler was frozen while nm0's process died and a new one started under its id: a link not
    heard from since the scheduler woke (on_paused) is stale, so the newcomer replaces it (its running task
    is failed as lost, once) instead of being refused; a link heard from since still refuses a clone."""
    now = [0.0]
    logic = SchedulerLogic(seed=7, clock=lambda: now[0])
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="process-0")])
    now[0] = 5.0
    logic.on_paused()
    out = logic.on_node_messages("nm0-new", [RegisterNodeMonitor("nm0", 1, (), instance="process-1")])
    assert [(peer, type(msg)) for peer, msg in out] == [("nm0-new", Registered)]
    assert list(logic.nodes) == ["nm0-new"]
    now[0] = 6.0  # heard from after the pause: live
    out = logic.on_node_messages("clone", [RegisterNodeMonitor("nm0", 1, (), instance="process-2")])
    assert [(peer, type(msg)) for peer, msg in out] == [("clone", RegistrationRefused)]
    assert list(logic.nodes) == ["nm0-new"]
