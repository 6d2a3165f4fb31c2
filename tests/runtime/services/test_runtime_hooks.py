"""The runtime hooks the commands use, sans-I/O: the scheduler's StatusReply (`sparrow status`), the
node monitor's heartbeat contents and its drain (clean shutdown). The Prometheus metrics: test_metrics.py."""

from __future__ import annotations

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TaskToNode,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def kinds(out):
    return [type(msg).__name__ for _, msg in out]


def test_status_reply_shows_nodes_with_their_heartbeat_and_jobs_in_flight():
    clock = Clock()
    logic = SchedulerLogic(scheduler_id="s1", seed=1, clock=clock, bind_idle=False)
    logic.on_node_messages("nm", [RegisterNodeMonitor("host-a", 4, ("ssd", "gpu"))])
    logic.on_node_messages("nm", [Heartbeat(queued=3, busy=2)])
    clock.now += 2.5
    logic.on_client_messages("client", [SubmitJob(1, [b"t0", b"t1"], user="alice")])
    job_id = next(iter(logic.jobs))
    logic.on_node_messages("nm", [GetTask(job_id)])  # refreshes host-a's last-heard time too
    clock.now += 1.0
    [(peer, reply)] = logic.on_client_messages("client", [StatusRequest()])
    assert peer == "client" and isinstance(reply, StatusReply) and reply.scheduler_id == "s1"
    [node] = reply.nodes
    assert (node.node_id, node.slots, node.labels, node.queued, node.busy) == ("host-a", 4, ("gpu", "ssd"), 3, 2)
    assert node.silent_for == 1.0
    [job] = reply.jobs
    assert (job.user, job.tasks, job.launched, job.running, job.done) == ("alice", 2, 1, 1, 0)
    assert reply.counters["jobs"] == 1 and reply.counters["tasks"] == 2


def test_drained_node_monitor_finishes_what_it_started_and_takes_nothing_new():
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1))
    for scheduler in ("s", "t"):
        logic.on_scheduler_registered(scheduler)
    out = logic.on_scheduler_messages("s", [EnqueueReservations(7, "", 0, 3), EnqueueReservations(8, "bob", 0, 2)])
    assert kinds(out) == ["GetTask"] and logic.busy == 1 and len(logic.queue) == 4
    assert logic.drain() == [(s, Heartbeat(queued=0, busy=1, draining=True)) for s in ("s", "t")]
    assert len(logic.queue) == 0  # its queued reservations are dropped: the schedulers re-probe them
    assert logic.heartbeat() == Heartbeat(0, 1, True)  # and every later heartbeat says so
    assert logic.on_scheduler_messages("t", [EnqueueReservations(9, "", 0, 5)]) == []  # sent before t heard
    assert len(logic.queue) == 0 and logic.stats["dropped_draining"] == 5
    out = logic.on_scheduler_messages("s", [TaskToNode(7, 0, b"payload")])
    assert kinds(out) == ["TaskToNode"]  # the task asked for before the drain still runs
    out = logic.on_task_done("s", 7, 0, Outcome(True, b"", ""))
    assert kinds(out) == ["OutcomeToScheduler"] and logic.busy == 0  # reported, and no new GetTask


def test_scheduler_stops_probing_a_draining_node_monitor_and_reprobes_what_it_held():
    logic = SchedulerLogic(scheduler_id="s1", seed=2, bind_idle=False)
    for peer in ("a", "b"):
        logic.on_node_messages(peer, [RegisterNodeMonitor(peer, 1)])
    out = logic.on_client_messages("client", [SubmitJob(1, [b"t0", b"t1", b"t2"], probe_ratio=1.0)])
    held = {peer: msg.count for peer, msg in out if type(msg) is EnqueueReservations}
    assert sum(held.values()) == 3 and set(held) == {"a", "b"}
    job_id = next(iter(logic.jobs))
    [(_, launch)] = [m for m in logic.on_node_messages("a", [GetTask(job_id)]) if type(m[1]) is TaskToNode]
    out = logic.on_node_messages("a", [Heartbeat(queued=0, busy=1, draining=True)])
    assert out[0] == ("a", Heartbeat())  # echoed as any heartbeat
    # a held its share minus the task it runs; those are re-probed, on b only (b still holds 1 or 2)
    reprobed = [(peer, msg.count) for peer, msg in out if type(msg) is EnqueueReservations]
    assert all(peer == "b" for peer, _ in reprobed)
    assert logic.stats["node_monitors_draining"] == 1
    out = logic.on_client_messages("client", [SubmitJob(2, [b"u0", b"u1"])])
    assert {peer for peer, msg in out if type(msg) is EnqueueReservations} == {"b"}  # new jobs avoid a
    # a's running task still reports, and b serves every other task
    out = logic.on_node_messages("a", [OutcomeToScheduler(job_id, launch.task, Outcome(True, b"ok", ""))])
    assert [m.task for _, m in out if type(m) is OutcomeToClient] == [launch.task]
    served = set()
    while True:
        answers = [m for _, m in logic.on_node_messages("b", [GetTask(job_id)]) if type(m) in (TaskToNode, NoTask)]
        if type(answers[0]) is NoTask:
            break
        served.add(answers[0].task)
    assert served == {0, 1, 2} - {launch.task}
    [(_, reply)] = logic.on_client_messages("client", [StatusRequest()])
    assert [(n.node_id, n.draining) for n in reply.nodes] == [("a", True), ("b", False)]


def test_when_the_only_node_monitor_drains_its_queued_tasks_fail_once_placement_gives_up():
    logic = SchedulerLogic(seed=2, placement_timeout=0, bind_idle=False)
    logic.on_node_messages("a", [RegisterNodeMonitor("a", 1)])
    logic.on_client_messages("client", [SubmitJob(1, [b"t0", b"t1"])])
    job_id = next(iter(logic.jobs))
    logic.on_node_messages("a", [GetTask(job_id)])  # task 0 runs there
    logic.on_client_messages("client", [SubmitJob(2, [b"u0"])])  # queued there only: fails whole
    out = logic.on_node_messages("a", [Heartbeat(0, 1, draining=True)])
    failed = sorted((m.ref, m.task, m.outcome.ok, m.outcome.error) for _, m in out if type(m) is OutcomeToClient)
    assert failed == [(1, 1, False, "no live node monitor"), (2, 0, False, "no live node monitor")]
    out = logic.on_node_messages("a", [OutcomeToScheduler(job_id, 0, Outcome(True, b"v", ""))])
    assert [(m.task, m.outcome.ok, m.last) for _, m in out if type(m) is OutcomeToClient] == [
        (0, True, True)
    ] and not logic.jobs
