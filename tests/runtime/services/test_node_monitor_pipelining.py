"""Pipelined late binding in NodeMonitorLogic (the `pipeline` modes always and gated), sans-I/O with a fake
clock: a busy slot asks ahead while reservations wait, a task answered ahead waits bound and starts when the slot
frees, and with the scheduler's logic every task still ends with exactly one outcome, including
when the node monitor dies with a task bound."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    Constraint,
    LinkConfig,
    LocalCluster,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.node_monitor import NodeMonitorService
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.services.worker_pool import ThreadExecutor
from sparrow_runtime.wire.limits import LINK_FULL
from sparrow_runtime.wire.messages import (
    CANCELLED,
    SYSTEM,
    UNPLACEABLE,
    CancelReservations,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    StopTask,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock
from .logic_link import link

OK = Outcome(True, b"", "")


def node(slots: int = 1, mode: str = "always", clock: ManualClock | None = None, depth: int = 1) -> NodeMonitorLogic:
    """A node monitor registered with scheduler "s"; mode always by default (the rule's mechanics from the first
    task: the gate's own tests pass mode="gated")."""
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, pipeline=mode, pipeline_depth=depth), clock=clock or ManualClock(0.0)
    )
    logic.on_scheduler_registered("s")
    return logic


def of(out: list, kind: type) -> list:
    return [msg for _, msg in out if type(msg) is kind]


def answer_one(
    logic: NodeMonitorLogic, rng: random.Random, pending: list[int], next_task: Counter, tasks: float
) -> list:
    """A fake scheduler answers one of the `pending` GetTasks (job ids) at random: the job's next task (`next_task`
    counts them) with probability `tasks`, else NoTask; the node monitor's output."""
    job = pending.pop(rng.randrange(len(pending)))
    if rng.random() < tasks:
        answer: TaskToNode | NoTask = TaskToNode(job, next_task[job], b"")
        next_task[job] += 1
    else:
        answer = NoTask(job)
    return logic.on_scheduler_messages("s", [answer])


def warmed(logic: NodeMonitorLogic, run_time: float = 0.0, tasks: int = 1, job: int = 999) -> NodeMonitorLogic:
    """`logic` after running `tasks` tasks of `run_time` seconds each (a deep pipeline goes deeper than 1
    only once its recent tasks were short); its clock must be a ManualClock."""
    for task in range(tasks):
        logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 1)])
        logic.on_scheduler_messages("s", [TaskToNode(job, task, b"")])
        logic.clock.now += run_time
        logic.on_task_done("s", job, task, OK)
    return logic


def test_a_busy_slot_asks_ahead_and_its_task_starts_the_moment_the_slot_frees() -> None:
    """1 slot, 3 reservations: the first GetTask holds the slot; once its task runs, the slot asks
    for the next one ahead; that answer waits bound (nothing for the executor) and starts when the
    first task ends, and the slot asks ahead for the third."""
    logic = node()
    assert of(logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)]), GetTask) == [GetTask(1)]
    out = logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    assert of(out, TaskToNode) == [TaskToNode(1, 0, b"")] and of(out, GetTask) == [GetTask(1)]
    assert logic.stats["asked_ahead"] == 1 and len(logic.queue) == 1
    assert logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")]) == []  # bound: waits for the slot
    assert len(logic.bound) == 1 and logic.free == 0
    out = logic.on_task_done("s", 1, 0, OK)
    assert out == [("s", OutcomeToScheduler(1, 0, OK)), ("s", TaskToNode(1, 1, b"")), ("s", GetTask(1))]
    assert not logic.bound and logic.stats["bound_ahead"] == 1 and len(logic.queue) == 0


def _asks_ahead_after(run_times: list[float], depth: int) -> bool:
    """A gated 1-slot node monitor that ran tasks of `run_times` (oldest first): does a busy slot ask ahead?"""
    logic = node(depth=depth, mode="gated")
    for task, run_time in enumerate(run_times):
        logic.on_scheduler_messages("s", [EnqueueReservations(100 + task, "u", 0, 1)])
        logic.on_scheduler_messages("s", [TaskToNode(100 + task, 0, b"")])
        logic.clock.now += run_time
        logic.on_task_done("s", 100 + task, 0, OK)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 8)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])  # it runs: the slot is busy, 7 reservations wait
    return logic.stats["asked_ahead"] > 0


@pytest.mark.parametrize("depth", [1, 16])
def test_the_gate_asks_ahead_only_while_each_of_the_last_8_tasks_ran_under_5_ms(depth: int) -> None:
    """Gated (the default), 1 slot, 1 and 16 deep: no task ended here yet, or one of the last 8 ran 5 ms or
    more: nothing is asked ahead (a task bound then could wait out a 10 ms-class one); each of the last 8
    under 5 ms (even with an older long one): asked ahead."""
    assert not _asks_ahead_after([], depth)
    assert _asks_ahead_after([0.001], depth)
    assert not _asks_ahead_after([0.001] * 3 + [0.006] + [0.001] * 4, depth)  # the median is short, the gate shut
    assert not _asks_ahead_after([0.010] * 8, depth)
    assert _asks_ahead_after([0.010] + [0.0049] * 8, depth)  # the long one is 9 tasks old


@pytest.mark.parametrize("depth", [1, 16])
def test_the_gate_asks_nothing_ahead_behind_a_task_already_running_5_ms(depth: int) -> None:
    """Gated after short tasks, 1 slot: reservations that arrive while the running task has run 5 ms or more
    (a long task after short ones) are not asked ahead, since a task bound then would wait it out; they are
    once a short task runs again."""
    logic = warmed(node(depth=depth, mode="gated"), run_time=0.001, tasks=8)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])  # it runs, long
    logic.clock.now += 0.005
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 8)])
    assert logic.stats["asked_ahead"] == 0 and len(logic.queue) == 8
    logic.clock.now += 0.001
    logic.on_task_done("s", 1, 0, OK)  # its run time shuts the gate too
    assert logic.stats["asked_ahead"] == 0


def test_without_the_gate_a_busy_slot_asks_ahead_behind_long_tasks() -> None:
    """Mode always (--pipeline always): after 10 ms tasks a busy slot still asks one ahead."""
    logic = node(mode="always")
    warmed(logic, run_time=0.010, tasks=8)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 8)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    assert logic.stats["asked_ahead"] == 1


@pytest.mark.parametrize("depth", [1, 16])
def test_the_gate_asks_nothing_ahead_for_a_job_held_once(depth: int) -> None:
    """Gated after short tasks, 1 slot, 1 and 16 deep: a job of which this node holds one reservation (batch
    sampling on a large cluster) is not asked ahead (the half rule, one deep too: late binding places it);
    with two of it held, one is; ungated one deep, the single one is asked ahead."""
    for mode, held, asked in (("gated", 1, 0), ("gated", 2, 1), ("always", 1, 1)):
        logic = warmed(node(depth=depth if mode == "gated" else 1, mode=mode), run_time=0.001, tasks=8)
        logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1), EnqueueReservations(2, "u", 0, held)])
        logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])  # job 1 runs; job 2's reservations wait
        assert logic.stats["asked_ahead"] == asked, (mode, held)


def test_without_the_setting_a_busy_slot_never_asks_ahead() -> None:
    """Mode off (plain late binding): reservations wait until the slot frees."""
    logic = node(mode="off")
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)])
    assert of(logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")]), GetTask) == []
    assert logic.stats["asked_ahead"] == 0 and len(logic.queue) == 2


def test_asks_ahead_only_while_reservations_wait_and_at_most_one_per_running_task() -> None:
    """2 slots both running, 5 reservations: exactly 2 asks ahead; with the queue empty, none."""
    logic = node(slots=2)
    asks = of(logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 5)]), GetTask)
    assert len(asks) == 2
    out = logic.on_scheduler_messages("s", [TaskToNode(1, 0, b""), TaskToNode(1, 1, b"")])
    assert len(of(out, GetTask)) == 2 and logic.ahead == 2 and len(logic.queue) == 1
    lone = node()
    lone.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 1)])
    assert of(lone.on_scheduler_messages("s", [TaskToNode(2, 0, b"")]), GetTask) == []


def test_a_deeper_pipeline_binds_up_to_its_depth_per_slot_and_starts_them_in_order() -> None:
    """1 slot, depth 3, 12 reservations: the free slot asks for its task and 3 requests go ahead with it;
    their tasks wait bound and each finish starts the next one bound, in the order answered, and asks
    ahead once more while reservations are left."""
    logic = warmed(node(depth=3))
    out = logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 12)])
    assert of(out, GetTask) == [GetTask(1)] * 4 and logic.ahead == 3 and len(logic.queue) == 8
    out = logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    assert of(out, TaskToNode) == [TaskToNode(1, 0, b"")] and of(out, GetTask) == []
    assert logic.on_scheduler_messages("s", [TaskToNode(1, t, b"") for t in (1, 2, 3)]) == []
    assert [m.task for _, m in logic.bound] == [1, 2, 3] and logic.ahead == 0
    out = logic.on_task_done("s", 1, 0, OK)
    assert of(out, TaskToNode) == [TaskToNode(1, 1, b"")] and of(out, GetTask) == [GetTask(1)]
    assert logic.ahead + len(logic.bound) == 3 and len(logic.queue) == 7


def test_a_deep_pipeline_asks_ahead_for_at_most_half_of_what_it_holds_of_a_job() -> None:
    """1 slot, depth 16, a 10-task job's 10 reservations here (its other 10 on another node monitor, probe
    ratio 2): the free slot asks for its task and, in the same write, 4 more go ahead (half of the 9 held,
    rounded down), not 9, so the other node monitor gets its share; as their answers come, half of what is
    left goes ahead again."""
    logic = warmed(node(depth=16))
    out = logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 10)])
    assert of(out, GetTask) == [GetTask(1)] * 5 and len(logic.queue) == 5  # the slot's, and 4 ahead with it
    out = logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    assert of(out, TaskToNode) == [TaskToNode(1, 0, b"")] and of(out, GetTask) == []
    out = logic.on_scheduler_messages("s", [TaskToNode(1, t, b"") for t in (1, 2, 3, 4)])
    assert of(out, GetTask) == [GetTask(1)] * 2 and len(logic.bound) == 4 and len(logic.queue) == 3
    plain = node(depth=1, slots=2)  # depth 1 keeps its rule: one ahead per running task, whatever the job
    plain.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 4)])
    out = plain.on_scheduler_messages("s", [TaskToNode(1, 0, b""), TaskToNode(1, 1, b"")])
    assert of(out, GetTask) == [GetTask(1)] * 2 and len(plain.queue) == 0


def test_a_deep_pipeline_stays_one_deep_until_and_while_its_recent_tasks_run_5_ms_or_longer() -> None:
    """Depth 8, 1 slot: before any task ran, and after 8 tasks of 6 ms, a busy slot asks one ahead (as
    depth 1); after 8 tasks of 0.1 ms (the median of the last 8 under 5 ms) it asks 8 deep again."""

    def asks_ahead(logic: NodeMonitorLogic, job: int) -> int:
        before = logic.stats["asked_ahead"]
        logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 40)])
        logic.on_scheduler_messages("s", [TaskToNode(job, 0, b"")])
        asked = logic.stats["asked_ahead"] - before
        logic.on_scheduler_messages("s", [CancelReservations(job)])
        return asked

    assert asks_ahead(node(depth=8), 1) == 1
    assert asks_ahead(warmed(node(depth=8), run_time=0.006, tasks=8), 1) == 1
    assert asks_ahead(warmed(warmed(node(depth=8), 0.006, 8), run_time=0.0001, tasks=8, job=998), 1) == 8


@pytest.mark.parametrize(("depth", "split"), [(1, [5, 5]), (16, [5, 5])])
def test_a_10_task_job_on_two_deep_pipelined_node_monitors_splits_evenly(depth: int, split: list[int]) -> None:
    """With the scheduler's logic: a 10-task job (probe ratio 2) on two 1-slot node monitors, both warmed
    with short tasks, every message delivered before a task finishes: each runs 5 of its tasks, at depth
    16 as at depth 1 (before the half rule, the first to ask took 9), and each task ends once."""
    scheduler = SchedulerLogic(seed=3, placement_timeout=0)
    monitors = {name: warmed(node(depth=depth)) for name in ("nm0", "nm1")}
    for name in monitors:
        scheduler.on_node_messages(name, [RegisterNodeMonitor(name, 1)])
    running: dict[str, list[int]] = {name: [] for name in monitors}
    ran: dict[str, int] = dict.fromkeys(monitors, 0)
    to_client: list = []

    def deliver(out: list, source: str = "scheduler") -> None:
        queue = [(source, peer, msg) for peer, msg in out]
        while queue:
            source, peer, msg = queue.pop(0)
            if source == "scheduler" and peer == "c":
                to_client.append(msg)
            elif source == "scheduler":
                queue += [(peer, "s", m) for _, m in monitors[peer].on_scheduler_messages("s", [msg])]
            elif type(msg) is TaskToNode:  # for the executor of node monitor `source`
                running[source].append(msg.task)
            else:
                queue += [("scheduler", p, m) for p, m in scheduler.on_node_messages(source, [msg])]

    deliver(scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 10)]))
    while any(running.values()):
        for name, logic in monitors.items():
            if running[name]:
                task = running[name].pop(0)
                ran[name] += 1
                deliver(logic.on_task_done("s", 1, task, OK), name)
    assert sorted(ran.values()) == split
    assert sorted(o.task for o in to_client if type(o) is OutcomeToClient) == list(range(10))


@pytest.mark.parametrize("depth", [0, 65, True, 2.0, "2"])
def test_a_pipeline_depth_out_of_its_range_is_refused_naming_it(depth) -> None:
    """pipeline_depth is an int in [1, 64]: anything else is a ValueError that names it."""
    with pytest.raises(ValueError, match="pipeline_depth must be an int in"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline_depth=depth))
    with pytest.raises(ValueError, match="pipeline_depth must be an int in"):
        LocalCluster(node_monitor=NodeMonitorConfig(pipeline_depth=depth))


def test_an_empty_answer_to_an_ask_ahead_frees_no_slot_and_asks_ahead_again() -> None:
    """NoTask for a request asked ahead: the slot stays with its running task, the user's turn is
    given back, and the next reservation is asked for ahead."""
    logic = node()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1), EnqueueReservations(2, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])  # asks ahead for job 2
    out = logic.on_scheduler_messages("s", [NoTask(2)])
    assert of(out, GetTask) == [GetTask(2)] and logic.free == 0 and logic.ahead == 1


def test_a_slot_that_frees_first_takes_over_the_request_asked_ahead() -> None:
    """The running task ends before the ask ahead is answered: the freed slot waits for that answer
    (no second GetTask for it), and the answer starts at once."""
    logic = node()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    out = logic.on_task_done("s", 1, 0, OK)
    assert out == [("s", OutcomeToScheduler(1, 0, OK))] and logic.free == 0 and logic.ahead == 0
    assert of(logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")]), TaskToNode) == [TaskToNode(1, 1, b"")]
    assert logic.stats["bound_ahead"] == 0


def test_a_bound_tasks_timeout_starts_when_it_starts() -> None:
    """A 2 s timeout on a task bound at t=0 that starts at t=5: not stopped at 2 s, stopped at 7 s."""
    clock = ManualClock(0.0)
    logic = node(clock=clock)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"", 2.0)])
    clock.now = 5.0
    logic.on_task_done("s", 1, 0, OK)
    clock.now = 6.9
    assert logic.on_timer() == []
    clock.now = 7.0
    assert [(m.job_id, m.task) for _, m in logic.on_timer()] == [(1, 1)]


def test_a_forced_cancel_of_a_bound_task_reports_it_cancelled_and_it_never_starts() -> None:
    logic = node()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
    out = logic.on_scheduler_messages("s", [StopTask(1, 1)])
    (reported,) = of(out, OutcomeToScheduler)
    assert (reported.job_id, reported.task, reported.outcome.ok, reported.outcome.failure) == (1, 1, False, CANCELLED)
    assert of(logic.on_task_done("s", 1, 0, OK), TaskToNode) == [] and logic.free == 1


def test_a_lost_scheduler_takes_its_bound_tasks_and_asks_ahead_with_it() -> None:
    """Its bound task never starts and its asks ahead are forgotten; the other scheduler's
    reservation is asked for ahead (task 0 still runs), and the slot task 0 frees waits for that."""
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline="always"))
    logic.on_scheduler_registered("s1")
    logic.on_scheduler_registered("s2")
    logic.on_scheduler_messages("s1", [EnqueueReservations(1, "u", 0, 3)])
    logic.on_scheduler_messages("s1", [TaskToNode(1, 0, b"")])  # asks s1 ahead
    logic.on_scheduler_messages("s1", [TaskToNode(1, 1, b"")])  # bound
    logic.on_scheduler_messages("s2", [EnqueueReservations(7, "u", 0, 1)])
    assert logic.ahead == 0 and len(logic.bound) == 1 and len(logic.queue) == 2  # one per running task
    assert logic.on_scheduler_lost("s1") == [("s2", GetTask(7))]
    assert not logic.bound and logic.ahead == 1 and logic.running == 1
    assert logic.on_task_done("s1", 1, 0, OK) == []  # nobody to report to; the slot waits for s2's answer
    assert logic.free == 0 and logic.ahead == 0
    assert of(logic.on_scheduler_messages("s2", [TaskToNode(7, 0, b"")]), TaskToNode) == [TaskToNode(7, 0, b"")]


def test_the_heartbeat_counts_busy_slots_and_drain_waits_for_bound_tasks() -> None:
    """Heartbeat.busy stays within the slots (dashboards show it over them); `busy`, which a drain
    waits on, counts the bound task too."""
    logic = node()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
    logic.drain()
    assert logic.heartbeat().busy == 1 and logic.busy == 2
    out = logic.on_task_done("s", 1, 0, OK)
    assert of(out, TaskToNode) == [TaskToNode(1, 1, b"")] and logic.busy == 1


@pytest.mark.parametrize("depth", [1, 4])
@pytest.mark.parametrize("seed", range(20))
def test_random_answers_and_finishes_keep_the_books(seed: int, depth: int) -> None:
    """A fake scheduler answers the outstanding GetTasks of 3 jobs in random order (a task or
    nothing) while tasks finish at random: slots never go below 0 or above the count, a request goes
    ahead only while fewer than `depth` per running task are ahead or bound (at depth 1 that holds at
    all times; deeper, those asked stay in flight as tasks finish, at most `depth` per slot), and every
    task answered is handed to the executor exactly once."""
    rng = random.Random(seed)
    logic = node(slots=3, depth=depth)
    pending: list[int] = []  # job ids asked for, not answered
    running: list[tuple[int, int]] = []
    handed: Counter[tuple[int, int]] = Counter()
    next_task = Counter[int]()

    def take(out: list) -> None:
        pending.extend(m.job_id for m in of(out, GetTask))
        for m in of(out, TaskToNode):
            handed[(m.job_id, m.task)] += 1
            running.append((m.job_id, m.task))

    for job in (1, 2, 3):
        take(logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 6)]))
    asked = logic.stats["asked_ahead"]
    for _ in range(200):
        choice = rng.random()
        if pending and choice < 0.6:
            take(answer_one(logic, rng, pending, next_task, 0.8))
        elif running:
            job, task = running.pop(rng.randrange(len(running)))
            take(logic.on_task_done("s", job, task, OK))
        held = logic.slots - logic.free
        assert 0 <= logic.free <= logic.slots and logic.running == len(running) <= logic.slots
        if depth == 1 or logic.stats["asked_ahead"] > asked:  # deeper: per slot held (running or asking)
            assert logic.ahead + len(logic.bound) <= (logic.running if depth == 1 else held) * depth
        assert logic.ahead + len(logic.bound) <= logic.slots * depth
        asked = logic.stats["asked_ahead"]
        assert len(pending) == logic.slots - logic.free - logic.running + logic.ahead
    assert all(n == 1 for n in handed.values())
    assert logic.stats["asked_ahead"] > 0


@pytest.mark.parametrize("depth", [1, 3])
def test_a_node_monitor_dying_with_a_task_bound_fails_it_once_as_system(depth: int) -> None:
    """With the scheduler's logic: a 1-slot pipelined node monitor runs task 0 and holds `depth` tasks
    bound when it dies; the scheduler reports exactly one outcome per task: SYSTEM for the launched ones
    (the client retries those as for any lost node monitor) and UNPLACEABLE for the last, left with
    no node monitor to run on."""
    scheduler = SchedulerLogic(seed=7, placement_timeout=0)
    monitor = warmed(node(depth=depth))
    scheduler.on_node_messages("nm", [RegisterNodeMonitor("nm", 1)])
    to_client, deliver = link(scheduler, monitor)
    tasks = depth + 2
    deliver(scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * tasks, probe_ratio=1.0)]))
    assert monitor.running == 1 and len(monitor.bound) == depth and monitor.ahead == 0
    deliver(scheduler.on_node_lost("nm"))
    outcomes = {o.task: o.outcome.failure for o in to_client if type(o) is OutcomeToClient}
    assert outcomes == {**dict.fromkeys(range(depth + 1), SYSTEM), depth + 1: UNPLACEABLE}
    assert sum(type(o) is OutcomeToClient for o in to_client) == tasks


def test_a_pipelined_node_monitor_holds_outcomes_and_get_tasks_only_while_a_task_is_bound() -> None:
    """NodeMonitorService._may_wait: with a task bound ahead, an outcome and a GetTask may wait to share
    a write (the slot's next task is there already); a big outcome, or anything once no task is bound,
    may not."""

    async def main() -> None:
        logic = node(depth=2)
        async with trio.open_nursery() as nursery:
            service = NodeMonitorService(logic, ThreadExecutor(1), nursery, link=LinkConfig(secret=b"s"), node_id="nm")
            done = OutcomeToScheduler(1, 0, OK)
            big = OutcomeToScheduler(1, 0, Outcome(True, b"x" * (LINK_FULL + 1), ""))
            assert not service._may_wait(done) and not service._may_wait(GetTask(1))
            logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)])
            logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
            logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
            assert len(logic.bound) == 1
            assert service._may_wait(done) and service._may_wait(GetTask(1))
            assert not service._may_wait(big) and not service._may_wait(Heartbeat(0, 1))

    trio.run(main)


@pytest.mark.parametrize("depth", [1, 8])
def test_a_deep_pipeline_over_loopback_gives_every_result_once_in_order(depth: int) -> None:
    """A scheduler and a 1-slot node monitor (thread executor) pipelined `depth` deep, in this process:
    300 no-op tasks give every value once, in order, and with depth 8 the node monitor asked ahead."""

    async def main() -> None:
        logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline="gated", pipeline_depth=depth))
        async with trio.open_nursery() as nursery:
            address = await nursery.start(partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret="s"))))
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret="s"), schedulers=[address], executor="thread"),
                    logic=logic,
                )
            )
            async with Client([address], secret="s") as client:
                with trio.fail_after(60):
                    job = await client.submit_job([partial(_square, x) for x in range(300)])
                    assert await job.results() == [x * x for x in range(300)]
            nursery.cancel_scope.cancel()
        assert logic.stats["launched"] == logic.stats["finished"] == 300
        if depth > 1:
            assert logic.stats["asked_ahead"] > 0

    trio.run(main)


def _square(x: int) -> int:
    return x * x


@pytest.mark.slow
def test_a_pipelined_cluster_runs_every_task_once_and_retries_a_killed_node_monitors() -> None:
    """Real processes, LocalCluster(pipeline="always": the gate off), 2 node monitors x 1 slot (thread
    executors): 100 no-op tasks give every value once, in order; then 4 half-second tasks (each node monitor runs one
    and holds the next bound) and node monitor 0 SIGKILLed: every task ends once, ok, the lost ones on
    a second attempt. (About 5 s: a cluster's start and two rounds of the sleeps.)"""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread", pipeline="always"),
            node_monitors=2,
            slots=1,
            dashboard=False,
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                job = await client.submit_job([partial(_square, x) for x in range(100)])
                with trio.fail_after(60):
                    assert await job.results() == [x * x for x in range(100)]
                job = await client.submit_job([partial(time.sleep, 0.5)] * 4, probe_ratio=1.0)
                await trio.sleep(0.3)  # each node monitor runs one task and holds one bound
                os.kill(cluster.node_monitor_pids[0], signal.SIGKILL)
                with trio.fail_after(60):
                    outcomes = await job.outcomes()
        assert [o.ok for o in outcomes] == [True] * 4
        assert sum(o.attempts == 2 for o in outcomes) >= 1 and max(o.attempts for o in outcomes) == 2

    trio.run(main)


def _short_nap(x: int) -> int:
    time.sleep(0.002)
    return x


@pytest.mark.slow
def test_a_node_monitor_sigkilled_with_tasks_bound_16_deep_loses_none_and_runs_none_twice() -> None:
    """Real processes, LocalCluster(pipeline_depth=16), 2 node monitors x 1 slot (thread
    executors): 2 ms tasks keep the node's median under the 5 ms rule, so each slot holds many tasks bound
    ahead; node monitor 0 is SIGKILLed once some of the job has run. Every task ends exactly once and ok
    (those bound at the dead node monitor on a second attempt), and the scheduler's outcomes equal its tasks."""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread", pipeline_depth=16),
            node_monitors=2,
            slots=1,
            dashboard=False,
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                job = await client.submit_job([partial(_short_nap, x) for x in range(1500)])
                with trio.fail_after(30):
                    while (await client.status()).counters.get("outcomes", 0) < 200:
                        await trio.sleep(0.01)
                os.kill(cluster.node_monitor_pids[0], signal.SIGKILL)
                with trio.fail_after(60):
                    outcomes = await job.outcomes()
                    counters = (await client.status()).counters
        assert len(outcomes) == 1500
        assert [o.value for o in outcomes] == list(range(1500)) and all(o.ok for o in outcomes)
        assert max(o.attempts for o in outcomes) == 2  # some were lost with node monitor 0 and ran again
        assert counters["outcomes"] == counters["tasks"]  # retries are tasks too: each ended once

    trio.run(main)


@pytest.mark.slow
def test_a_node_monitor_of_slow_tasks_binds_no_task_behind_its_running_one() -> None:
    """Real processes, LocalCluster's defaults (the node monitors': steady, 16 deep), 2 node monitors x 1 slot, process
    executors: after 20 ms tasks, nm-0 runs an 8 s task; four 1-task jobs reserved on both node monitors each end
    while it still runs (nm-1 takes them: the gate keeps nm-0 from binding one behind its long task, which the
    ungated rule does for about half of them). About 12 s."""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=2, slots=1, dashboard=False
        ) as cluster:
            assert "--pipeline" not in cluster._node_monitor_args(0)  # the node monitors' own default decides
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                warm = await client.submit_job([partial(time.sleep, 0.02)] * 16)
                with trio.fail_after(60):
                    await warm.outcomes()
                long = await client.submit_job([partial(time.sleep, 8.0)], constraints=Constraint(("nm-0",)))
                await trio.sleep(0.5)  # it runs on nm-0
                for i in range(4):
                    short = await client.submit_job([partial(_square, i)])
                    with trio.fail_after(60):
                        assert await short.results() == [i * i]
                    assert not long.done(), f"short job {i} ended after the long task: it was bound behind it"
                with trio.fail_after(60):
                    (outcome,) = await long.outcomes()
                assert outcome.ok

    trio.run(main)
