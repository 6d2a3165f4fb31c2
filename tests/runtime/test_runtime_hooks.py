"""The runtime hooks the commands use, sans-I/O: the scheduler's StatusReply (`sparrow status`), the
node monitor's heartbeat contents and its drain (clean shutdown), and the Prometheus metrics."""

from __future__ import annotations

import prometheus_client
from sparrow_runtime.messages import (
    CancelReservations,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    NoTask,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TaskFinished,
    TaskLaunch,
    TaskResult,
)
from sparrow_runtime.metrics import MeteredNodeMonitorLogic, MeteredSchedulerLogic
from sparrow_runtime.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.scheduler_logic import SchedulerLogic


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def kinds(out):
    return [type(msg).__name__ for _, msg in out]


def test_status_reply_shows_nodes_with_their_heartbeat_and_jobs_in_flight():
    clock = Clock()
    logic = SchedulerLogic(scheduler_id="s1", seed=1, clock=clock)
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
    logic = NodeMonitorLogic(slots=1)
    for scheduler in ("s", "t"):
        logic.on_scheduler_registered(scheduler)
    out = logic.on_scheduler_messages("s", [EnqueueReservations(7, "", 0, 3), EnqueueReservations(8, "bob", 0, 2)])
    assert kinds(out) == ["GetTask"] and logic.busy == 1 and len(logic.queue) == 4
    assert logic.drain() == [(s, Heartbeat(queued=0, busy=1, draining=True)) for s in ("s", "t")]
    assert len(logic.queue) == 0  # its queued reservations are dropped: the schedulers re-probe them
    assert logic.heartbeat() == Heartbeat(0, 1, True)  # and every later heartbeat says so
    assert logic.on_scheduler_messages("t", [EnqueueReservations(9, "", 0, 5)]) == []  # sent before t heard
    assert len(logic.queue) == 0 and logic.stats["dropped_draining"] == 5
    out = logic.on_scheduler_messages("s", [TaskLaunch(7, 0, b"payload")])
    assert kinds(out) == ["TaskLaunch"]  # the task asked for before the drain still runs
    out = logic.on_task_done("s", 7, 0, True, b"", "")
    assert kinds(out) == ["TaskFinished"] and logic.busy == 0  # reported, and no new GetTask


def test_scheduler_stops_probing_a_draining_node_monitor_and_reprobes_what_it_held():
    logic = SchedulerLogic(scheduler_id="s1", seed=2)
    for peer in ("a", "b"):
        logic.on_node_messages(peer, [RegisterNodeMonitor(peer, 1)])
    out = logic.on_client_messages("client", [SubmitJob(1, [b"t0", b"t1", b"t2"], probe_ratio=1.0)])
    held = {peer: msg.count for peer, msg in out if type(msg) is EnqueueReservations}
    assert sum(held.values()) == 3 and set(held) == {"a", "b"}
    job_id = next(iter(logic.jobs))
    [(_, launch)] = [m for m in logic.on_node_messages("a", [GetTask(job_id)]) if type(m[1]) is TaskLaunch]
    out = logic.on_node_messages("a", [Heartbeat(queued=0, busy=1, draining=True)])
    assert out[0] == ("a", Heartbeat())  # echoed as any heartbeat
    # a held its share minus the task it runs; those are re-probed, on b only (b still holds 1 or 2)
    reprobed = [(peer, msg.count) for peer, msg in out if type(msg) is EnqueueReservations]
    assert all(peer == "b" for peer, _ in reprobed)
    assert logic.stats["node_monitors_draining"] == 1
    out = logic.on_client_messages("client", [SubmitJob(2, [b"u0", b"u1"])])
    assert {peer for peer, msg in out if type(msg) is EnqueueReservations} == {"b"}  # new jobs avoid a
    # a's running task still reports, and b serves every other task
    out = logic.on_node_messages("a", [TaskFinished(job_id, launch.task, True, b"ok", "")])
    assert [m.task for _, m in out if type(m) is TaskResult] == [launch.task]
    served = set()
    while True:
        answers = [m for _, m in logic.on_node_messages("b", [GetTask(job_id)]) if type(m) in (TaskLaunch, NoTask)]
        if type(answers[0]) is NoTask:
            break
        served.add(answers[0].task)
    assert served == {0, 1, 2} - {launch.task}
    [(_, reply)] = logic.on_client_messages("client", [StatusRequest()])
    assert [(n.node_id, n.draining) for n in reply.nodes] == [("a", True), ("b", False)]


def test_when_the_only_node_monitor_drains_its_queued_tasks_fail_at_once():
    logic = SchedulerLogic(seed=2)
    logic.on_node_messages("a", [RegisterNodeMonitor("a", 1)])
    logic.on_client_messages("client", [SubmitJob(1, [b"t0", b"t1"])])
    job_id = next(iter(logic.jobs))
    logic.on_node_messages("a", [GetTask(job_id)])  # task 0 runs there
    logic.on_client_messages("client", [SubmitJob(2, [b"u0"])])  # queued there only: fails whole
    out = logic.on_node_messages("a", [Heartbeat(0, 1, draining=True)])
    failed = sorted((m.ref, m.task, m.ok, m.error) for _, m in out if type(m) is TaskResult)
    assert failed == [(1, 1, False, "no live node monitor"), (2, 0, False, "no live node monitor")]
    out = logic.on_node_messages("a", [TaskFinished(job_id, 0, True, b"v", "")])
    assert [(m.task, m.ok, m.last) for _, m in out if type(m) is TaskResult] == [(0, True, True)] and not logic.jobs


def test_scheduler_metrics_count_the_protocol_traffic():
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredSchedulerLogic(registry, scheduler_id="s", seed=3)
    value = registry.get_sample_value
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 2)])
    logic.on_client_messages("c", [SubmitJob(1, [b"x", b"y"])])
    job_id = next(iter(logic.jobs))
    out = logic.on_node_messages("nm", [GetTask(job_id), GetTask(job_id), GetTask(job_id)])
    assert kinds(out).count("TaskLaunch") == 2 and kinds(out).count("NoTask") == 1
    assert any(isinstance(msg, CancelReservations) for _, msg in out)
    logic.on_node_messages("nm", [TaskFinished(job_id, 0, True, b"", ""), TaskFinished(job_id, 1, False, b"", "boom")])
    expected = {
        "sparrow_jobs_submitted_total": 1, "sparrow_tasks_submitted_total": 2, "sparrow_probes_sent_total": 4,
        "sparrow_get_task_total": 3, "sparrow_get_task_empty_total": 1, "sparrow_tasks_launched_total": 2,
        "sparrow_cancellations_sent_total": 1, "sparrow_tasks_finished_total": 1, "sparrow_tasks_failed_total": 1,
        "sparrow_jobs_finished_total": 1, "sparrow_scheduling_delay_seconds_count": 2,
        "sparrow_job_response_seconds_count": 1, "sparrow_node_monitors": 1, "sparrow_jobs_in_flight": 0,
    }  # fmt: skip
    assert {name: value(name) for name in expected} == expected


def test_node_monitor_metrics_follow_its_queue_and_slots():
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredNodeMonitorLogic(registry, slots=2)
    value = registry.get_sample_value
    logic.on_scheduler_registered("s")
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "", 0, 5)])
    assert (value("sparrow_node_queue_length"), value("sparrow_node_busy_slots")) == (3, 2)
    logic.on_scheduler_messages("s", [NoTask(1), CancelReservations(1)])
    assert value("sparrow_node_reservations_total") == 5 and value("sparrow_node_get_task_empty_total") == 1
    assert value("sparrow_node_reservations_cancelled_total") == 3  # removed before the freed slot is refilled
    assert (value("sparrow_node_queue_length"), value("sparrow_node_busy_slots")) == (0, 1)
    logic.on_task_done("s", 1, 0, False, b"", "died")
    assert value("sparrow_node_tasks_failed_total") == 1 and value("sparrow_node_slots") == 2
