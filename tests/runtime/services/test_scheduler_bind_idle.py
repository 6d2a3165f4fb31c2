"""SchedulerLogic(bind_idle=True), sans-I/O: a job's first tasks go with its reservations to the node monitors
the scheduler believes idle (TaskToNode.bound), and every task is still handed out once and ends with one
outcome: when all of a job's tasks go that way, when the belief is stale (the node monitor busy after all:
both logics together), when the node monitor dies with one, and when a forced cancel races it."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.placement_log import PlacementLog, read_log
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    CANCELLED,
    SYSTEM,
    CancelJob,
    CancelReservations,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    JobAccepted,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    StopTask,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock

OK = Outcome(True, b"", "")


def _cluster(n: int, slots: int = 1, **kw) -> SchedulerLogic:
    logic = SchedulerLogic(seed=3, bind_idle=True, **kw)
    for i in range(n):
        logic.on_node_messages(f"nm{i}", [RegisterNodeMonitor(f"nm{i}", slots, (), instance=f"p{i}")])
    logic.on_client_connected("c", "client-1")
    return logic


def _submit(logic: SchedulerLogic, n: int, ref: int = 1, **kw) -> list:
    return logic.on_client_messages("c", [SubmitJob(ref, [b"t%d" % i for i in range(n)], user="alice", **kw)])


def _of(out: list, kind: type) -> list:
    return [(peer, msg) for peer, msg in out if type(msg) is kind]


def test_an_idle_cluster_gets_one_task_per_slot_with_the_reservations_and_the_rest_by_get_task() -> None:
    """10 tasks, 2 idle node monitors x 1 slot, d = 2: each gets one task bound (with the job's user and client
    session) and 9 reservations instead of 10; the GetTasks then hand out the other 8, each task once."""
    logic = _cluster(2)
    out = _submit(logic, 10)
    bound = _of(out, TaskToNode)
    assert sorted(peer for peer, _ in bound) == ["nm0", "nm1"]
    assert all(m.bound and m.user == "alice" and m.session == "client-1" for _, m in bound)
    assert {peer: m.count for peer, m in _of(out, EnqueueReservations)} == {"nm0": 9, "nm1": 9}
    launched = [m.task for _, m in bound]
    for i in range(18):
        for _, m in _of(logic.on_node_messages(f"nm{i % 2}", [GetTask(1)]), TaskToNode):
            assert not m.bound
            launched.append(m.task)
    assert sorted(launched) == list(range(10))
    assert logic.stats["bound_with_reservations"] == 2 and logic.stats["launched"] == 10


def test_a_job_whose_every_task_goes_bound_sends_no_reservation_and_no_cancel() -> None:
    """2 tasks on 2 idle node monitors, d = 1: both go bound; no EnqueueReservations, no CancelReservations,
    and the job has left the task table (nothing is left to ask for); its two outcomes end it."""
    logic = _cluster(2)
    out = _submit(logic, 2, probe_ratio=1.0)
    assert len(_of(out, TaskToNode)) == 2 and not _of(out, EnqueueReservations) and not _of(out, CancelReservations)
    assert 1 not in logic.table
    done = []
    for peer, m in _of(out, TaskToNode):
        done += [
            m2 for _, m2 in _of(logic.on_node_messages(peer, [OutcomeToScheduler(1, m.task, OK)]), OutcomeToClient)
        ]
    assert sorted(m.task for m in done) == [0, 1] and done[-1].last and not logic.jobs


def test_a_node_monitor_holding_a_live_job_or_an_unreported_task_gets_reservations_only() -> None:
    """Job 1 bound a task to each node monitor; job 2, submitted while they hold it, gets plain reservations;
    once job 1 ended (outcomes reported), job 3 is bound again."""
    logic = _cluster(2)
    out1 = _submit(logic, 2, probe_ratio=1.0)
    assert not _of(_submit(logic, 2, ref=2), TaskToNode)
    for peer, m in _of(out1, TaskToNode):
        logic.on_node_messages(peer, [OutcomeToScheduler(1, m.task, OK)])
    # job 2's reservations still hold both node monitors: ask them out
    for i in range(4):
        out = logic.on_node_messages(f"nm{i % 2}", [GetTask(2)])
        for _, m in _of(out, TaskToNode):
            logic.on_node_messages(f"nm{i % 2}", [OutcomeToScheduler(2, m.task, OK)])
    assert not logic.jobs
    assert len(_of(_submit(logic, 2, ref=3, probe_ratio=1.0), TaskToNode)) == 2


def test_a_heartbeat_showing_other_work_stops_binding_there_until_one_shows_none() -> None:
    """A node monitor holding nothing of this scheduler's whose heartbeat shows a busy slot (another
    scheduler's task) gets only reservations; after a heartbeat showing it idle, tasks are bound again."""
    logic = _cluster(1)
    logic.on_node_messages("nm0", [Heartbeat(queued=0, busy=1)])
    out = _submit(logic, 1)
    assert not _of(out, TaskToNode) and _of(out, EnqueueReservations)
    (task,) = [m.task for _, m in _of(logic.on_node_messages("nm0", [GetTask(1)]), TaskToNode)]
    logic.on_node_messages("nm0", [OutcomeToScheduler(1, task, OK)])
    logic.on_node_messages("nm0", [Heartbeat(queued=0, busy=0)])
    assert len(_of(_submit(logic, 1, ref=2), TaskToNode)) == 1


def test_a_heartbeat_sent_while_it_held_our_task_does_not_count_as_other_work() -> None:
    """The heartbeat shows busy 1 while our bound task runs there: that is ours, so once its outcome is in
    the next job is bound again (the belief is not left stale by our own work)."""
    logic = _cluster(1)
    (bound,) = _of(_submit(logic, 1), TaskToNode)
    logic.on_node_messages("nm0", [Heartbeat(queued=0, busy=1)])
    logic.on_node_messages("nm0", [OutcomeToScheduler(1, bound[1].task, OK)])
    assert len(_of(_submit(logic, 1, ref=2), TaskToNode)) == 1


def test_a_node_monitor_lost_with_a_bound_task_fails_it_once_as_a_system_failure() -> None:
    """nm0 dies holding its bound task: that task fails once (SYSTEM); the job's other tasks run on nm1 by
    its reservations, each once, and the job ends with one outcome per task."""
    logic = _cluster(2)
    out = _submit(logic, 4)
    lost = next(m.task for peer, m in _of(out, TaskToNode) if peer == "nm0")
    other = next(m.task for peer, m in _of(out, TaskToNode) if peer == "nm1")
    outcomes = [m for _, m in _of(logic.on_node_lost("nm0"), OutcomeToClient)]
    assert [(m.task, m.outcome.failure) for m in outcomes] == [(lost, SYSTEM)]
    outcomes += [m for _, m in _of(logic.on_node_messages("nm1", [OutcomeToScheduler(1, other, OK)]), OutcomeToClient)]
    for _ in range(10):
        got = _of(logic.on_node_messages("nm1", [GetTask(1)]), TaskToNode)
        for _, m in got:
            outcomes += [
                x for _, x in _of(logic.on_node_messages("nm1", [OutcomeToScheduler(1, m.task, OK)]), OutcomeToClient)
            ]
        if not logic.jobs:
            break
    assert sorted(m.task for m in outcomes) == [0, 1, 2, 3] and outcomes[-1].last


def test_a_forced_cancel_racing_a_bound_task_gives_one_cancelled_outcome() -> None:
    """The client cancels with force while its bound task is on its way: the scheduler answers CANCELLED at
    once and sends StopTask; the node monitor's own CANCELLED (or a late ok) for it is stale: no second one."""
    logic = _cluster(1)
    ((peer, bound),) = _of(_submit(logic, 1), TaskToNode)
    out = logic.on_client_messages("c", [CancelJob(1, force=True)])
    assert [m.task for _, m in _of(out, OutcomeToClient)] == [bound.task]
    assert [m.outcome.failure for _, m in _of(out, OutcomeToClient)] == [CANCELLED]
    assert _of(out, StopTask) == [(peer, StopTask(1, bound.task))]
    late = logic.on_node_messages(peer, [OutcomeToScheduler(1, bound.task, Outcome(False, b"", "x", CANCELLED))])
    assert not _of(late, OutcomeToClient)
    assert logic.nodes[peer].running == 0  # its slot counts as free again for the next job


def test_without_the_setting_no_task_goes_unasked() -> None:
    """bind_idle=False: plain late binding, reservations only."""
    logic = SchedulerLogic(seed=3, bind_idle=False)
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="p")])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    assert not _of(out, TaskToNode) and _of(out, EnqueueReservations)


def _run_job_out(logic: SchedulerLogic, clock: ManualClock, out: list, ref: int, per_task: float) -> list:
    """Answer job `ref`'s tasks (its job id: a test's refs count from 1, as the scheduler's ids do): each node
    monitor runs what it got (bound, or asked for by GetTask one reservation at a time) `per_task` seconds each
    by `clock`; returns the client's outcomes."""
    outcomes = [m for _, m in _of(out, OutcomeToClient)]
    held = Counter({peer: m.count for peer, m in _of(out, EnqueueReservations)})
    todo = list(_of(out, TaskToNode))
    while todo or (logic.jobs and any(held.values())):
        if not todo:
            peer = next(p for p, n in held.items() if n)
            held[peer] -= 1
            todo = _of(logic.on_node_messages(peer, [GetTask(ref)]), TaskToNode)
            continue
        peer, m = todo.pop(0)
        clock.now += per_task
        outcomes += [
            x for _, x in _of(logic.on_node_messages(peer, [OutcomeToScheduler(m.job_id, m.task, OK)]), OutcomeToClient)
        ]
    return outcomes


def test_after_short_tasks_an_idle_cluster_gets_a_small_job_whole_with_no_get_task() -> None:
    """Once each recent busy span of both node monitors took under 5 ms per task, a 10-task job on the idle
    cluster is bound whole, half of each node monitor's reservations (as its pipelining would ask ahead at
    once): 5 tasks each, no reservation, no GetTask; each task ends with one outcome, the last marked so."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    first = _submit(logic, 10)
    assert len(_of(first, TaskToNode)) == 2  # nothing known of its tasks yet: one per slot
    assert sorted(m.task for m in _run_job_out(logic, clock, first, 1, 0.0001)) == list(range(10))
    assert all(node.short for node in logic.nodes.values())
    out = _submit(logic, 10, ref=2)
    bound = _of(out, TaskToNode)
    assert Counter(peer for peer, _ in bound) == {"nm0": 5, "nm1": 5} and all(m.bound for _, m in bound)
    assert not _of(out, EnqueueReservations) and 2 not in logic.table
    outcomes = _run_job_out(logic, clock, out, 2, 0.0001)
    assert sorted(m.task for m in outcomes) == list(range(10)) and outcomes[-1].last and not logic.jobs
    assert [m.last for m in outcomes].count(True) == 1


def _learn(logic: SchedulerLogic, clock: ManualClock, per_task: float) -> None:
    """Two 2-task jobs whose tasks each take `per_task`: both node monitors' recent spans say so."""
    for ref in (1, 2):
        _run_job_out(logic, clock, _submit(logic, 2, ref=ref), ref, per_task)


@pytest.mark.parametrize("per_task", [0.00002, 0.00004])
def test_a_tiny_job_goes_whole_to_one_idle_node_monitor(per_task: float) -> None:
    """Once the recent spans took 20 or 40 us per task, a 10-task job (at most 0.4 ms of work: TINY_JOB_WORK is 0.5)
    on 2 idle node monitors goes whole to one of them: 10 bound there, no message at all to the other, no
    reservation, no GetTask (one node monitor and one worker woken, not two each; split 5 + 5 before). Each task
    ends with one outcome, the last marked so, and the next job goes whole too."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _learn(logic, clock, per_task)
    for ref in (3, 4):
        out = _submit(logic, 10, ref=ref)
        bound = _of(out, TaskToNode)
        assert len(bound) == 10 and all(m.bound for _, m in bound)
        assert len({peer for peer, _ in out if peer != "c"}) == 1 and not _of(out, EnqueueReservations)
        outcomes = _run_job_out(logic, clock, out, ref, per_task)
        assert sorted(m.task for m in outcomes) == list(range(10)) and [m.last for m in outcomes].count(True) == 1
        assert outcomes[-1].last and not logic.jobs


def test_a_job_of_tasks_a_little_longer_is_split_as_before() -> None:
    """60 us per task: 10 of them would take 0.6 ms on one node monitor, over TINY_JOB_WORK: 5 + 5, as for
    longer tasks (the half rule)."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _learn(logic, clock, 0.00006)
    bound = _of(_submit(logic, 10, ref=3), TaskToNode)
    assert Counter(peer for peer, _ in bound) == {"nm0": 5, "nm1": 5}


def test_after_a_slow_span_a_tiny_job_is_split_until_two_tiny_spans() -> None:
    """A span of 1 ms per task (a map's throughput under load, or longer tasks) at both node monitors: the next
    no-op job is split 5 + 5 (the half rule: that node would take 10 ms for 10 such tasks); once each node
    monitor's last 2 spans (TINY_SPANS) took 20 us per task, it goes whole again, though the slow span is still
    among the 8 that `short` looks at."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _learn(logic, clock, 0.00002)
    _run_job_out(logic, clock, _submit(logic, 17, ref=3), 3, 0.001)  # 9 + 8: over 16, split (test below)
    out = _submit(logic, 10, ref=4)
    assert Counter(peer for peer, _ in _of(out, TaskToNode)) == {"nm0": 5, "nm1": 5}
    _run_job_out(logic, clock, out, 4, 0.00002)  # one tiny span each: the slow one is still among the last 2
    out = _submit(logic, 10, ref=5)
    assert Counter(peer for peer, _ in _of(out, TaskToNode)) == {"nm0": 5, "nm1": 5}
    _run_job_out(logic, clock, out, 5, 0.00002)
    assert all(node.short for node in logic.nodes.values())
    assert len({peer for peer, _ in _of(_submit(logic, 10, ref=6), TaskToNode)}) == 1


def test_a_job_of_more_than_16_tasks_per_slot_is_not_bound_whole_to_one_node_monitor() -> None:
    """17 no-op tasks on 2 idle 1-slot node monitors: over TINY_JOB_TASKS for one, so the first takes its half
    (1 + 8) and the second, which can take the 8 left whole, takes them: 9 + 8, still no GetTask."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _learn(logic, clock, 0.00002)
    out = _submit(logic, 17, ref=3)
    assert sorted(Counter(peer for peer, _ in _of(out, TaskToNode)).values()) == [8, 9]
    assert not _of(out, EnqueueReservations)


def test_a_busy_span_of_5_ms_per_task_binds_one_per_slot_until_8_shorter_spans() -> None:
    """A node monitor whose busy span took 6 ms per task gets one task bound per slot (the rest by late
    binding); the gate seen from the scheduler opens again only once each of its last 8 spans was short."""
    clock = ManualClock()
    logic = _cluster(1, clock=clock)
    out = _submit(logic, 4)  # nothing known of its tasks yet: one per slot
    ((_, first),) = _of(out, TaskToNode)
    ((_, second),) = _of(logic.on_node_messages("nm0", [GetTask(1)]), TaskToNode)
    for m in (first, second):  # one span of two tasks ending 6 ms apart
        clock.now += 0.006
        logic.on_node_messages("nm0", [OutcomeToScheduler(1, m.task, OK)])
    assert not logic.nodes["nm0"].short
    for _ in range(2):  # its other two tasks: a short span each
        ((_, m),) = _of(logic.on_node_messages("nm0", [GetTask(1)]), TaskToNode)
        clock.now += 0.0001
        logic.on_node_messages("nm0", [OutcomeToScheduler(1, m.task, OK)])
    for ref in range(2, 7):  # 5 more short spans (a 1-task job is one): the slow one is still among the last 8
        _run_job_out(logic, clock, _submit(logic, 1, ref=ref), ref, 0.0001)
    out = _submit(logic, 4, ref=7)
    assert len(_of(out, TaskToNode)) == 1 and sum(m.count for _, m in _of(out, EnqueueReservations)) == 7
    _run_job_out(logic, clock, out, 7, 0.0001)  # more short spans: the slow one drops out
    assert logic.nodes["nm0"].short
    out = _submit(logic, 4, ref=8)
    assert len(_of(out, TaskToNode)) == 1 + 7 // 2  # of its 8 reservations: the slot's, then half the rest


def test_a_span_of_one_task_over_5_ms_says_nothing_of_the_tasks() -> None:
    """A lone task whose outcome came 8 ms after it was sent (a round trip under load, or a long task: the
    scheduler cannot tell) leaves the node monitor's state as it was, short or not."""
    clock = ManualClock()
    logic = _cluster(1, clock=clock)
    _run_job_out(logic, clock, _submit(logic, 1), 1, 0.008)
    assert not logic.nodes["nm0"].short and not logic.nodes["nm0"].recent_spans
    _run_job_out(logic, clock, _submit(logic, 1, ref=2), 2, 0.0001)
    _run_job_out(logic, clock, _submit(logic, 1, ref=3), 3, 0.008)
    assert logic.nodes["nm0"].short and list(logic.nodes["nm0"].recent_spans) == [pytest.approx(0.0001)]


def test_a_slow_round_trip_before_a_span_does_not_shut_the_gate_but_slow_tasks_in_it_do() -> None:
    """A job bound whole whose first outcomes come 8 ms late (the round trip) but the rest 0.1 ms apart leaves
    both node monitors short; one whose tasks end 6 ms apart shuts the gate: the next job binds one per slot."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _run_job_out(logic, clock, _submit(logic, 2), 1, 0.0001)
    bound = _of(_submit(logic, 10, ref=2), TaskToNode)
    assert len(bound) == 10
    clock.now += 0.008
    for peer, m in bound:
        logic.on_node_messages(peer, [OutcomeToScheduler(2, m.task, OK)])
        clock.now += 0.0001
    assert all(node.short for node in logic.nodes.values())
    out = _submit(logic, 10, ref=3)
    assert len(_of(out, TaskToNode)) == 10
    _run_job_out(logic, clock, out, 3, 0.006)
    assert not any(node.short for node in logic.nodes.values())
    assert len(_of(_submit(logic, 10, ref=4), TaskToNode)) == 2


def test_a_placement_log_lists_each_bound_task_as_an_answer(tmp_path: Path) -> None:
    """Under a placement log (the experiments'), a task bound with its reservations is logged as a GetTask's
    answer would be, so the log still names every launched task once, and where it ran."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    logic.placements = PlacementLog(tmp_path / "s.jsonl", "s")
    _run_job_out(logic, clock, _submit(logic, 2), 1, 0.0001)
    bound = _of(_submit(logic, 10, ref=2), TaskToNode)
    logic.placements.close()
    answers = [a for a in read_log(tmp_path / "s.jsonl").answers if a.job == 2]
    assert sorted((a.task, a.node) for a in answers) == sorted((m.task, peer) for peer, m in bound)
    assert len(answers) == 10 and not any(a.stolen for a in answers)


def test_a_big_job_binds_at_most_9_tasks_per_slot_and_leaves_the_rest_to_late_binding() -> None:
    """200 tasks on 2 idle node monitors of short tasks: each gets 1 + 8 (BIND_AHEAD) bound and its other
    reservations; the GetTasks hand out the rest, each task once."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _run_job_out(logic, clock, _submit(logic, 2), 1, 0.0001)
    out = _submit(logic, 200, ref=2)
    assert Counter(peer for peer, _ in _of(out, TaskToNode)) == {"nm0": 9, "nm1": 9}
    assert sum(m.count for _, m in _of(out, EnqueueReservations)) == 400 - 18
    outcomes = _run_job_out(logic, clock, out, 2, 0.0001)
    assert sorted(m.task for m in outcomes) == list(range(200)) and outcomes[-1].last


def test_a_forced_cancel_of_a_job_bound_whole_gives_each_task_one_cancelled_outcome() -> None:
    """A job bound whole (5 + 5) cancelled with force: each task CANCELLED once, a StopTask for each; the
    node monitors' late outcomes are stale; both node monitors count as idle again once they reported."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _run_job_out(logic, clock, _submit(logic, 2), 1, 0.0001)
    bound = _of(_submit(logic, 10, ref=2), TaskToNode)
    assert len(bound) == 10
    out = logic.on_client_messages("c", [CancelJob(2, force=True)])
    assert sorted((m.task, m.outcome.failure) for _, m in _of(out, OutcomeToClient)) == [
        (t, CANCELLED) for t in range(10)
    ]
    assert len(_of(out, StopTask)) == 10
    for peer, m in bound:
        late = logic.on_node_messages(peer, [OutcomeToScheduler(2, m.task, Outcome(False, b"", "x", CANCELLED))])
        assert not _of(late, OutcomeToClient)
    assert all(node.running == 0 for node in logic.nodes.values()) and not logic.jobs


def test_a_node_monitor_lost_with_half_a_job_bound_fails_those_tasks_once() -> None:
    """nm0 dies holding its 5 bound tasks: each fails once (SYSTEM); nm1's 5 end normally; one outcome per task."""
    clock = ManualClock()
    logic = _cluster(2, clock=clock)
    _run_job_out(logic, clock, _submit(logic, 2), 1, 0.0001)
    bound = _of(_submit(logic, 10, ref=2), TaskToNode)
    outcomes = [m for _, m in _of(logic.on_node_lost("nm0"), OutcomeToClient)]
    assert sorted(m.task for m in outcomes) == sorted(m.task for p, m in bound if p == "nm0")
    assert all(m.outcome.failure == SYSTEM for m in outcomes)
    for peer, m in bound:
        if peer == "nm1":
            outcomes += [
                x for _, x in _of(logic.on_node_messages(peer, [OutcomeToScheduler(2, m.task, OK)]), OutcomeToClient)
            ]
    assert sorted(m.task for m in outcomes) == list(range(10)) and outcomes[-1].last and not logic.jobs


def _settle(scheduler: SchedulerLogic, nm: NodeMonitorLogic, to_nm: list, nm_out: list, running: list, to_client: list):
    """Route messages between the scheduler and node monitor nm0 until quiet: the client's go to
    `to_client`, the tasks nm0 launches to `running` (its executor, in order); another scheduler's are dropped."""
    while to_nm or nm_out:
        while to_nm:
            peer, msg = to_nm.pop(0)
            if peer == "c":
                to_client.append(msg)
            else:
                nm_out += nm.on_scheduler_messages("s", [msg])
        while nm_out:
            peer, msg = nm_out.pop(0)
            if type(msg) is TaskToNode:
                running.append((peer, msg))
            elif peer == "s":
                to_nm += scheduler.on_node_messages("nm0", [msg])


def test_a_stale_idle_belief_runs_the_bound_task_once_after_the_busy_slot_frees() -> None:
    """Both logics: nm0's one slot runs another scheduler's task, which this scheduler has not heard of (no
    heartbeat since), so its 3-task job binds a task there: it waits bound (nothing starts, no GetTask), runs
    when the slot frees, and every task of the job runs exactly once and ends with exactly one outcome."""
    scheduler = _cluster(1)
    nm = NodeMonitorLogic(NodeMonitorConfig(slots=1), clock=ManualClock(0.0))
    nm.on_scheduler_registered("s")
    nm.on_scheduler_registered("t")
    nm.on_scheduler_messages("t", [EnqueueReservations(9, "bob", 0, 1)])
    assert _of(nm.on_scheduler_messages("t", [TaskToNode(9, 0, b"")]), TaskToNode)  # t's task runs
    out = _submit(scheduler, 3)
    assert [m.bound for _, m in _of(out, TaskToNode)] == [True]
    running: list = []
    to_client: list = []
    _settle(scheduler, nm, out, [], running, to_client)
    assert running == [] and len(nm.bound) == 1 and [type(m) for m in to_client] == [JobAccepted]
    _settle(scheduler, nm, [], nm.on_task_done("t", 9, 0, OK), running, to_client)
    ran: Counter = Counter()
    while running:
        peer, msg = running.pop(0)
        ran[(msg.job_id, msg.task)] += 1
        _settle(scheduler, nm, [], nm.on_task_done(peer, msg.job_id, msg.task, OK), running, to_client)
    assert ran == {(1, 0): 1, (1, 1): 1, (1, 2): 1}
    outcomes = [m for m in to_client if type(m) is OutcomeToClient]
    assert sorted(m.task for m in outcomes) == [0, 1, 2] and outcomes[-1].last and not scheduler.jobs


def _mark_then(path: str, value: int, nap: float) -> int:
    """Note one run of a task in `path` (a file per task), nap, return `value`."""
    with open(path, "a") as f:
        f.write("x")
    time.sleep(nap)
    return value


@pytest.mark.slow
@pytest.mark.parametrize("depth", [0, 16])
def test_small_jobs_on_a_real_cluster_binding_idle_node_monitors_run_each_task_exactly_once(
    tmp_path: Path, depth: int
) -> None:
    """Real processes, LocalCluster (bind_idle on by default), 2 node monitors x 1 slot, process executors, pipelining
    off and 16 deep: 60 jobs of 1-4 tasks, one at a time (bound to idle node monitors) and in bursts of 5 (later
    ones find them busy); every task ends once and ok, on its first attempt, and ran exactly once (a marker
    file per task); tasks went bound."""
    rng = random.Random(4)
    sizes = [rng.randint(1, 4) for _ in range(60)]
    pipelining = {"pipeline_depth": depth} if depth else {"pipeline": "off"}
    node = NodeMonitorConfig(executor="process", **pipelining)

    async def main() -> dict:
        with LocalCluster(node_monitors=2, slots=1, node_monitor=node, dashboard=False) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                for start in range(0, len(sizes), 5):
                    burst = start % 10 == 5  # every other group of 5 goes at once
                    jobs = []
                    for j in range(start, start + 5):
                        tasks = [partial(_mark_then, str(tmp_path / f"j{j}t{t}"), t, 0.002) for t in range(sizes[j])]
                        job = await client.submit_job(tasks)
                        if burst:
                            jobs.append((j, job))
                        else:
                            with trio.fail_after(60):
                                outcomes = await job.outcomes()
                            assert [o.value for o in outcomes] == list(range(sizes[j]))
                            assert all(o.ok and o.attempts == 1 for o in outcomes)
                    for j, job in jobs:
                        with trio.fail_after(60):
                            outcomes = await job.outcomes()
                        assert [o.value for o in outcomes] == list(range(sizes[j]))
                        assert all(o.ok and o.attempts == 1 for o in outcomes)
                status = await client.status()
                return status.counters

    counters = trio.run(main)
    runs = {p.name: len(p.read_text()) for p in tmp_path.iterdir()}
    assert len(runs) == sum(sizes) and set(runs.values()) == {1}
    assert counters["bound_with_reservations"] >= 30  # the one-at-a-time jobs' first tasks, at least
    assert counters["launched"] == sum(sizes)


@pytest.mark.slow
def test_the_default_cluster_binds_small_jobs_of_short_tasks_beyond_one_per_slot_each_task_once(tmp_path: Path) -> None:
    """Real processes, LocalCluster's defaults (bind_idle on, pipelined), 2 node monitors x 1 slot: 20 jobs of 10
    no-op tasks one at a time; every task ran exactly once (a marker file each) and ended ok on its first attempt,
    and more tasks went bound than one per slot per job (the share: a job bound whole once the spans ran short)."""

    async def main() -> dict:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=2, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                for j in range(20):
                    job = await client.submit_job(
                        [partial(_mark_then, str(tmp_path / f"j{j}t{t}"), t, 0.0) for t in range(10)]
                    )
                    with trio.fail_after(60):
                        outcomes = await job.outcomes()
                    assert [o.value for o in outcomes] == list(range(10))
                    assert all(o.ok and o.attempts == 1 for o in outcomes)
                return (await client.status()).counters

    counters = trio.run(main)
    runs = {p.name: len(p.read_text()) for p in tmp_path.iterdir()}
    assert len(runs) == 200 and set(runs.values()) == {1}
    assert counters["launched"] == 200
    assert counters["bound_with_reservations"] > 2 * 20, counters["bound_with_reservations"]


@pytest.mark.slow
def test_a_node_monitor_killed_with_its_bound_task_fails_it_once_and_the_retry_runs_elsewhere(
    tmp_path: Path,
) -> None:
    """Real processes: 2 idle node monitors x 1 slot, a job of 2 tasks at probe ratio 1 (each bound to one node
    monitor at once); node monitor nm-0 is killed (SIGKILL) while its task runs: that task's outcome comes from
    a second attempt (the client retries a SYSTEM failure), run on nm-1; the other ran once."""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=2, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                tasks = [partial(_mark_then, str(tmp_path / f"t{t}"), t, 3.0) for t in range(2)]
                job = await client.submit_job(tasks, probe_ratio=1.0)
                with trio.fail_after(30):  # both run, one at each node monitor
                    while not all((tmp_path / f"t{t}").exists() for t in range(2)):
                        await trio.sleep(0.02)
                os.kill(cluster.pids[1], signal.SIGKILL)  # nm-0 (schedulers first)
                with trio.fail_after(60):
                    outcomes = await job.outcomes()
                status = await client.status()
        assert [o.value for o in outcomes] == [0, 1] and all(o.ok for o in outcomes)
        assert sorted(o.attempts for o in outcomes) == [1, 2]
        assert status.counters["bound_with_reservations"] == 2
        again = next(t for t, o in enumerate(outcomes) if o.attempts == 2)
        assert len((tmp_path / f"t{again}").read_text()) == 2 and len((tmp_path / f"t{1 - again}").read_text()) == 1

    trio.run(main)
