"""The scheduler's task-control rules, sans-I/O on a fake clock: jobs waiting for a node monitor
(placement_timeout), cancel (with and without force), per-job timeouts only where tasks can be
stopped, the per-client bound, client heartbeats (the liveness rule itself: wire/test_liveness.py)."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    CANCELLED,
    UNPLACEABLE,
    CancelJob,
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
    RegisterNodeMonitor,
    ReleaseSession,
    StopTask,
    SubmitJob,
    TaskToNode,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def logic_with(*nodes: tuple[str, bool], **kw) -> tuple[SchedulerLogic, Clock]:
    """A scheduler with node monitors (id, can_stop) and a fake clock, under plain late binding."""
    clock = Clock()
    logic = SchedulerLogic(seed=3, clock=clock, bind_idle=False, **kw)
    for node_id, can_stop in nodes:
        logic.on_node_messages(node_id, [RegisterNodeMonitor(node_id, 1, instance=node_id, can_stop=can_stop)])
    return logic, clock


def of(out, kind):
    return [(peer, msg) for peer, msg in out if type(msg) is kind]


def submit(logic, n, ref=1, client="c", **kw):
    return logic.on_client_messages(client, [SubmitJob(ref, [b"t%d" % i for i in range(n)], **kw)])


def test_a_job_waits_for_a_node_monitor_and_runs_when_one_registers():
    """No live node monitor for a moment (a restart, a partition) is not a failure: the job waits."""
    logic, clock = logic_with(placement_timeout=5.0)
    out = submit(logic, 2)
    assert of(out, JobAccepted) and not of(out, OutcomeToClient) and logic.waiting
    clock.now += 4.9
    assert logic.on_timer() == []
    out = logic.on_node_messages("late", [RegisterNodeMonitor("late", 1, instance="x")])
    assert sum(m.count for _, m in of(out, EnqueueReservations)) == 4 and not logic.waiting
    clock.now += 10
    assert logic.on_timer() == []  # placed: nothing expires


def test_a_job_that_waits_past_placement_timeout_fails_with_its_reason():
    logic, clock = logic_with(placement_timeout=5.0)
    submit(logic, 2)
    clock.now += 5.0
    out = logic.on_timer()
    results = [m for _, m in of(out, OutcomeToClient)]
    assert [(m.task, m.outcome.failure) for m in results] == [(0, UNPLACEABLE), (1, UNPLACEABLE)]
    assert results[0].outcome.error == "no live node monitor (waited 5 s)" and not logic.jobs and not logic.waiting


def test_placement_timeout_zero_fails_at_once():
    logic, _ = logic_with(placement_timeout=0)
    assert [m.outcome.failure for _, m in of(submit(logic, 1), OutcomeToClient)] == [UNPLACEABLE]


def test_cancel_before_launch_never_launches_and_answers_at_once():
    logic, _ = logic_with(("nm", True))
    submit(logic, 2)
    out = logic.on_client_messages("c", [CancelJob(1)])
    assert [(m.task, m.outcome.failure) for _, m in of(out, OutcomeToClient)] == [(0, CANCELLED), (1, CANCELLED)]
    assert of(out, OutcomeToClient)[-1][1].last
    assert logic.on_node_messages("nm", [GetTask(1)]) == [("nm", NoTask(1))]  # its reservations were dropped


def test_cancel_of_a_running_task_without_force_drops_its_result():
    logic, _ = logic_with(("nm", True))
    submit(logic, 1)
    logic.on_node_messages("nm", [GetTask(1)])
    out = logic.on_client_messages("c", [CancelJob(1)])
    assert [(m.task, m.outcome.failure) for _, m in of(out, OutcomeToClient)] == [(0, CANCELLED)] and not of(
        out, StopTask
    )
    assert logic.on_node_messages("nm", [OutcomeToScheduler(1, 0, Outcome(True, b"late"))]) == []  # discarded


def test_cancel_with_force_stops_the_running_task_on_its_node_monitor():
    logic, _ = logic_with(("nm", True))
    submit(logic, 1)
    logic.on_node_messages("nm", [GetTask(1)])
    out = logic.on_client_messages("c", [CancelJob(1, force=True)])
    assert of(out, StopTask) == [("nm", StopTask(1, 0))]
    assert [m.outcome.failure for _, m in of(out, OutcomeToClient)] == [CANCELLED]


def test_cancelling_some_tasks_of_a_job_leaves_the_others_to_run():
    """Future.cancel() on one future of a map chunk: only that task ends as cancelled; a reservation
    that comes up for it is answered with NoTask, and the job's other task still launches."""
    logic, _ = logic_with(("nm", True), placement_timeout=0)
    submit(logic, 2, probe_ratio=1.0)
    out = logic.on_client_messages("c", [CancelJob(1, tasks=[0])])
    assert [(m.task, m.outcome.failure, m.last) for _, m in of(out, OutcomeToClient)] == [(0, CANCELLED, False)]
    launched = []
    for _ in range(4):  # the node monitor's reservations, each answered
        for _, msg in logic.on_node_messages("nm", [GetTask(1)]):
            if type(msg) is TaskToNode:
                launched.append(msg.task)
    assert launched == [1]


def test_a_cancel_of_pending_tasks_only_leaves_a_running_one_to_its_outcome():
    """CancelJob(pending_only) (shutdown(cancel_futures=True)): the scheduler, which hands tasks out, cancels
    those it has not, and the one it has runs and delivers its result."""
    logic, _ = logic_with(("nm", True))
    submit(logic, 2)
    (launch,) = of(logic.on_node_messages("nm", [GetTask(1)]), TaskToNode)
    out = logic.on_client_messages("c", [CancelJob(1, tasks=[0, 1], pending_only=True)])
    assert [(m.task, m.outcome.failure) for _, m in of(out, OutcomeToClient)] == [(1 - launch[1].task, CANCELLED)]
    out = logic.on_node_messages("nm", [OutcomeToScheduler(1, launch[1].task, Outcome(True, b"done"))])
    assert [(m.task, m.outcome.ok, m.last) for _, m in of(out, OutcomeToClient)] == [(launch[1].task, True, True)]


def test_cancel_of_a_finished_or_unknown_job_is_a_harmless_race():
    logic, _ = logic_with(("nm", True))
    assert logic.on_client_messages("c", [CancelJob(42)]) == []


def test_a_job_with_a_timeout_is_placed_only_where_tasks_can_be_stopped():
    logic, _ = logic_with(("threads", False), ("processes", True))
    out = submit(logic, 3, timeout=2.5)
    assert {peer for peer, _ in of(out, EnqueueReservations)} == {"processes"}
    ((_, launch),) = of(logic.on_node_messages("processes", [GetTask(1)]), TaskToNode)
    assert launch.timeout == 2.5


def test_a_job_with_a_timeout_is_rejected_by_a_cluster_that_cannot_stop_tasks():
    logic, _ = logic_with(("threads", False))
    ((_, rejected),) = of(submit(logic, 1, timeout=1.0), JobRejected)
    assert "can stop a running task" in rejected.reason and "process executors" in rejected.reason


def test_the_per_client_bound_rejects_a_job_naming_the_setting():
    logic, _ = logic_with(("nm", True), max_client_tasks=5)
    assert of(submit(logic, 3), JobAccepted)
    ((_, rejected),) = of(submit(logic, 3, ref=2), JobRejected)
    assert "max_client_tasks of 5" in rejected.reason
    assert of(submit(logic, 2, ref=3), JobAccepted)  # up to the bound
    assert of(submit(logic, 1, client="other"), JobAccepted)  # per client


def test_a_clients_heartbeat_is_echoed():
    logic, _ = logic_with()
    assert logic.on_client_messages("c", [Heartbeat()]) == [("c", Heartbeat())]


def test_labels_starting_sparrow_colon_are_reserved():
    logic, _ = logic_with()
    out = logic.on_node_messages("liar", [RegisterNodeMonitor("liar", 1, ("sparrow:stops-tasks",), "i")])
    assert [type(m) for _, m in out] == [Error] and "reserved" in out[0][1].reason


@pytest.mark.parametrize("bad", [{"placement_timeout": -1}, {"max_client_tasks": 0}])
def test_bad_task_control_settings_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        SchedulerLogic(**bad)


def _running(logic: SchedulerLogic, client: str, n: int) -> list:
    """Submit a job of `n` tasks from `client` and launch every one where it was probed."""
    out = logic.on_client_messages(client, [SubmitJob(1, [b"t"] * n, probe_ratio=1.0)])
    launched = []
    for peer, msg in [(p, m) for p, m in out if type(m) is EnqueueReservations]:
        for _ in range(msg.count):
            launched += [
                (peer, m) for _, m in logic.on_node_messages(peer, [GetTask(msg.job_id)]) if type(m) is TaskToNode
            ]
    assert len(launched) == n
    return launched


def test_a_lost_clients_running_tasks_are_stopped_after_the_grace_where_they_can_be():
    """Client c is lost with 4 tasks running on a node monitor that can stop tasks and one that
    cannot: nothing is stopped within the 2 s grace; then each task on the first gets StopTask, those
    on the second run on (counted), every node monitor is told to drop c's values (ReleaseSession),
    and on_timer has nothing more to do."""
    logic, clock = logic_with(("procs", True), ("threads", False), client_grace=2.0)
    logic.on_client_connected("c", "client-1")
    launched = _running(logic, "c", 4)
    logic.on_client_lost("c")
    assert logic.timers_due
    clock.now += 1.9
    assert logic.on_timer() == []
    clock.now += 0.2
    stops = logic.on_timer()
    on_procs = sorted(m.task for p, m in launched if p == "procs")
    assert 0 < len(on_procs) < 4  # both kinds of node monitor run some (seeded)
    assert sorted(m.task for p, m in stops if p == "procs" and type(m) is StopTask) == on_procs
    assert all(p == "procs" for p, m in stops if type(m) is StopTask)
    assert sorted((p, m.session) for p, m in stops if type(m) is ReleaseSession) == [
        ("procs", "client-1"),
        ("threads", "client-1"),
    ]
    assert logic.stats["orphans_stopped"] == len(on_procs)
    assert logic.stats["orphans_left_running"] == 4 - len(on_procs)
    assert not logic.timers_due


def test_a_lost_client_that_comes_back_within_the_grace_keeps_its_tasks_running():
    """The same client id connects again on another link within the grace: no StopTask."""
    logic, clock = logic_with(("procs", True), client_grace=2.0)
    logic.on_client_connected("c", "client-1")
    _running(logic, "c", 1)
    logic.on_client_lost("c")
    clock.now += 1.0
    logic.on_client_connected("c2", "client-1")
    clock.now += 1.5
    assert logic.on_timer() == [] and not logic.timers_due


class _Certified:
    """A client peer authenticated by certificate (what the shell's Connection gives the logic)."""

    def __init__(self, user: str, role: str = "client") -> None:
        from sparrow_runtime.wire.tls import Identity

        self.identity = Identity(user, role, user)


def test_a_session_belongs_to_its_certificates_user():
    """Bob's client claims alice's client id: while alice is away it does not count as her coming back
    (her tasks are stopped after the grace), and when bob's client goes its ReleaseSession names bob, so
    node monitors drop only his values of that session; alice's names her; an admin's names nobody (all)."""
    logic, clock = logic_with(("procs", True), client_grace=2.0)
    alice, bob, root = _Certified("alice"), _Certified("bob"), _Certified("root", "admin")
    logic.on_client_connected(alice, "client-1")
    _running(logic, alice, 1)
    logic.on_client_lost(alice)
    logic.on_client_connected(bob, "client-1")
    clock.now += 2.5
    out = logic.on_timer()
    assert [type(m).__name__ for _, m in out] == ["ReleaseSession", "StopTask"]
    assert (out[0][1].session, out[0][1].user) == ("client-1", "alice")
    logic.on_client_lost(bob)
    logic.on_client_connected(root, "client-1")
    logic.on_client_lost(root)
    clock.now += 2.5
    released = [(m.session, m.user) for _, m in logic.on_timer() if type(m) is ReleaseSession]
    assert released == [("client-1", "bob"), ("client-1", None)]


def test_client_grace_must_be_a_number_of_seconds():
    with pytest.raises(ValueError, match="client_grace must be a number of seconds >= 0"):
        SchedulerLogic(client_grace=-1)
