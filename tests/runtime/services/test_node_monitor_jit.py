"""Just-in-time pipelining (NodeMonitorLogic(pipeline="jit"), `--pipeline jit`), sans-I/O with a fake clock:
while the node's last 8 run times are steady, a busy slot asks for its next task only shortly before the running
task's predicted end (the shortest recent run time less the measured round trip and a margin), never behind a task
that overran its prediction, and never while the run times vary; with the scheduler's logic every task still ends
with exactly one outcome (a forced cancel, the scheduler's loss, the node monitor's loss)."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
import trio

from sparrow_core import PIPELINE_JIT_MARGIN as JIT_MARGIN
from sparrow_core import PIPELINE_JIT_SPREAD as JIT_SPREAD
from sparrow_core import PIPELINE_RECENT as RECENT_TASKS
from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.pipeline import JIT_ROUND_TRIP
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    CANCELLED,
    SYSTEM,
    UNPLACEABLE,
    CancelJob,
    EnqueueReservations,
    GetTask,
    Outcome,
    OutcomeToClient,
    RegisterNodeMonitor,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock
from .logic_link import link
from .test_node_monitor_pipelining import answer_one, of

OK = Outcome(True, b"", "")
RUN = 0.010  # the warmed node's recent tasks: 10 ms each


def node(run_times: list[float] | None = None, slots: int = 1, mode: str = "jit", **settings) -> NodeMonitorLogic:
    """A 16-deep node monitor in pipelining mode `mode` ("jit", "steady": test_node_monitor_steady.py, or
    "gated"), registered with scheduler "s", after tasks of `run_times` (default: 8 of RUN); `settings`: more of
    its NodeMonitorConfig's."""
    config = NodeMonitorConfig(slots=slots, pipeline=mode, pipeline_depth=16, **settings)
    logic = NodeMonitorLogic(config, clock=ManualClock(0.0))
    logic.on_scheduler_registered("s")
    for task, run_time in enumerate([RUN] * RECENT_TASKS if run_times is None else run_times):
        logic.on_scheduler_messages("s", [EnqueueReservations(999, "u", 0, 1)])
        logic.on_scheduler_messages("s", [TaskToNode(999, task, b"")])
        logic.clock.now += run_time
        logic.on_task_done("s", 999, task, OK)
    return logic


def running_with_reservations(logic: NodeMonitorLogic, held: int = 8) -> float:
    """Job 1 gets `held` reservations here and its first task runs (the slot is busy, the rest wait); when it
    started."""
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, held)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    return logic.clock.now


def test_steady_10_ms_tasks_ask_ahead_just_before_the_predicted_end_and_the_next_starts_at_once() -> None:
    """After 8 tasks of 10 ms: a running task does not ask ahead at once (the gate alone never would); it asks once
    it has run 10 ms less the round trip (JIT_ROUND_TRIP until one is measured) and the margin, and not before; the
    answer waits bound and starts the moment the running task ends."""
    logic = node()
    start = running_with_reservations(logic)
    assert logic.stats["asked_ahead"] == 0 and logic.pipeline.steady
    due = start + RUN - JIT_ROUND_TRIP - JIT_MARGIN
    assert logic.ask_ahead_at() == pytest.approx(due)
    logic.clock.now = due - 0.0001
    assert of(logic.on_ask_ahead_timer(), GetTask) == [] and logic.stats["asked_ahead"] == 0
    logic.clock.now = due
    assert of(logic.on_ask_ahead_timer(), GetTask) == [GetTask(1)] and logic.stats["asked_ahead"] == 1
    assert logic.ask_ahead_at() is None  # one deep: nothing more is due for this task
    logic.clock.now += 0.0005
    assert of(logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")]), TaskToNode) == []  # bound, waiting
    logic.clock.now = start + RUN
    assert of(logic.on_task_done("s", 1, 0, OK), TaskToNode) == [TaskToNode(1, 1, b"")]


def test_the_gate_alone_asks_nothing_ahead_for_steady_10_ms_tasks() -> None:
    """Mode gated (the gate alone): the same node never asks ahead, however long its task runs."""
    logic = node(mode="gated")
    running_with_reservations(logic)
    assert logic.ask_ahead_at() is None
    for _ in range(12):
        logic.clock.now += 0.001
        logic.on_ask_ahead_timer()
    assert logic.stats["asked_ahead"] == 0


@pytest.mark.parametrize(
    "run_times",
    [
        [RUN] * (RECENT_TASKS - 1),  # too few known
        [RUN] * (RECENT_TASKS - 1) + [RUN * JIT_SPREAD * 1.01],  # one over the spread
        [0.005 * (1 + i) for i in range(RECENT_TASKS)],  # exponential-like: varied
    ],
)
def test_varied_or_too_few_run_times_ask_nothing_ahead(run_times: list[float]) -> None:
    logic = node(run_times)
    assert not logic.pipeline.steady
    running_with_reservations(logic)
    for _ in range(60):
        logic.clock.now += 0.001
        logic.on_ask_ahead_timer()
    assert logic.stats["asked_ahead"] == 0


def test_a_spread_within_the_limit_is_steady() -> None:
    logic = node([RUN] * (RECENT_TASKS - 1) + [RUN * JIT_SPREAD * 0.99])
    assert logic.pipeline.steady


def test_nothing_is_asked_ahead_behind_a_task_that_overran_its_prediction() -> None:
    """Reservations that come once the running task has run past the longest recent run time are not asked ahead
    (a task bound then would wait out a task whose end is no longer foreseen); the next task's are."""
    logic = node()
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.clock.now += RUN * 1.05
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 8)])
    assert logic.stats["asked_ahead"] == 0 and logic.ask_ahead_at() is None
    logic.on_ask_ahead_timer()
    assert logic.stats["asked_ahead"] == 0
    logic.on_task_done("s", 1, 0, OK)  # 10.5 ms: still steady
    logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    logic.clock.now += RUN - JIT_ROUND_TRIP
    assert of(logic.on_ask_ahead_timer(), GetTask) == [GetTask(2)]


def test_the_measured_round_trip_moves_the_ask() -> None:
    """A request asked ahead answered 3 ms after it went: the next task asks 3 ms (the median of the measured round
    trips) and the margin before its predicted end."""
    logic = node()
    start = running_with_reservations(logic)
    logic.clock.now = start + RUN - JIT_ROUND_TRIP - JIT_MARGIN
    logic.on_ask_ahead_timer()
    logic.clock.now += 0.003
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])  # after the slot's predicted end: bound
    logic.on_task_done("s", 1, 0, OK)  # task 1 starts now
    assert logic.ask_ahead_at() == pytest.approx(logic.clock.now + RUN - 0.003 - JIT_MARGIN)


def test_a_request_taken_over_by_a_freed_slot_is_no_round_trip_of_an_ask_ahead() -> None:
    """The running task ends before the answer to the request asked ahead: the freed slot takes the request over (its
    answer then starts at once, holding the slot) and its send time is dropped, so the next request asked ahead,
    answered 0.5 ms after it went, measures 0.5 ms (a stale send time would have made it 12 ms)."""
    logic = node()
    start = running_with_reservations(logic)
    logic.clock.now = start + RUN - JIT_ROUND_TRIP - JIT_MARGIN
    logic.on_ask_ahead_timer()
    logic.clock.now = start + RUN
    logic.on_task_done("s", 1, 0, OK)  # the slot takes over the request in flight
    logic.clock.now += 0.002
    assert of(logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")]), TaskToNode) == [TaskToNode(1, 1, b"")]
    started = logic.clock.now
    logic.clock.now = started + RUN - JIT_ROUND_TRIP - JIT_MARGIN
    assert of(logic.on_ask_ahead_timer(), GetTask) == [GetTask(1)]
    logic.clock.now += 0.0005
    logic.on_scheduler_messages("s", [TaskToNode(1, 2, b"")])  # bound
    logic.clock.now = started + RUN
    logic.on_task_done("s", 1, 1, OK)
    assert logic.ask_ahead_at() == pytest.approx(logic.clock.now + RUN - 0.0005 - JIT_MARGIN)


def test_a_job_held_once_is_not_asked_ahead() -> None:
    """The half rule bounds these requests too: a job of which the node holds one reservation is placed by late
    binding; with two held, one is asked ahead when due."""
    for held, asked in ((1, 0), (2, 1)):
        logic = node()
        logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1), EnqueueReservations(2, "u", 0, held)])
        logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
        logic.clock.now += RUN - JIT_ROUND_TRIP
        logic.on_ask_ahead_timer()
        assert logic.stats["asked_ahead"] == asked, held


@pytest.mark.parametrize("mode", ["jit", "steady"])
@pytest.mark.parametrize("seed", range(20))
def test_random_answers_timers_and_finishes_keep_the_books(seed: int, mode: str) -> None:
    """3 slots after steady tasks, just in time or steady: a fake scheduler answers the outstanding GetTasks of 3 jobs
    in random order (a task or nothing), tasks finish after 10-13 ms (steady) and the ask-ahead timer fires at random:
    slots stay in range, at most one request is ahead or bound per running task, and every task answered is handed to
    the executor once."""
    rng = random.Random(seed)
    logic = node(slots=3, mode=mode)
    pending: list[int] = []
    running: list[tuple[int, int, float]] = []  # (job, task, when it started), oldest first
    handed: Counter[tuple[int, int]] = Counter()
    next_task = Counter[int]()

    def take(out: list) -> None:
        pending.extend(m.job_id for m in of(out, GetTask))
        for m in of(out, TaskToNode):
            handed[(m.job_id, m.task)] += 1
            running.append((m.job_id, m.task, logic.clock.now))

    for job in (1, 2, 3):
        take(logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 8)]))
    for _ in range(300):
        logic.clock.now += rng.uniform(0, 0.002)
        choice = rng.random()
        if pending and choice < 0.4:
            take(answer_one(logic, rng, pending, next_task, 0.85))
        elif running and choice < 0.7:
            job, task, start = running.pop(0)
            logic.clock.now = max(logic.clock.now, start + RUN * rng.uniform(1.0, 1.3))
            take(logic.on_task_done("s", job, task, OK))
        else:
            take(logic.on_ask_ahead_timer())
        assert 0 <= logic.free <= logic.slots and logic.running == len(running) <= logic.slots
        assert logic.ahead + len(logic.bound) <= logic.slots
        assert len(pending) == logic.slots - logic.free - logic.running + logic.ahead
    assert all(n == 1 for n in handed.values())
    assert logic.stats["asked_ahead"] > 0


def _one_bound_ahead(mode: str) -> tuple[SchedulerLogic, NodeMonitorLogic, list, Callable[..., None]]:
    """A scheduler and a steady 1-slot node monitor (`mode` jit or steady): a 4-task job runs its task 0, and task 1
    is asked ahead (just in time, or steady: at once) and bound. Returns the two, the client's messages so far, and
    `deliver` (logic_link.py)."""
    scheduler = SchedulerLogic(seed=7, placement_timeout=0)
    monitor = node(mode=mode)
    scheduler.on_node_messages("nm", [RegisterNodeMonitor("nm", 1)])
    to_client, deliver = link(scheduler, monitor)
    deliver(scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 4, probe_ratio=1.0)]))
    assert monitor.running == 1 and len(monitor.bound) == (mode == "steady")
    monitor.clock.now += RUN - JIT_ROUND_TRIP
    deliver(monitor.on_ask_ahead_timer(), "monitor")
    assert monitor.running == 1 and len(monitor.bound) == 1 and monitor.stats["asked_ahead"] == 1
    return scheduler, monitor, to_client, deliver


def _outcomes(to_client: list) -> dict[int, int]:
    ends = [o for o in to_client if type(o) is OutcomeToClient]
    assert len(ends) == len({o.task for o in ends}), "a task ended twice"
    return {o.task: o.outcome.failure for o in ends}


@pytest.mark.parametrize("mode", ["jit", "steady"])
def test_a_task_asked_ahead_ends_once_when_its_node_monitor_dies(mode: str) -> None:
    """The node monitor dies with task 0 running and task 1 bound ahead: both fail once as SYSTEM (the client
    retries them), the two never asked end once as UNPLACEABLE (no node monitor left)."""
    scheduler, _, to_client, deliver = _one_bound_ahead(mode)
    deliver(scheduler.on_node_lost("nm"))
    assert _outcomes(to_client) == {0: SYSTEM, 1: SYSTEM, 2: UNPLACEABLE, 3: UNPLACEABLE}


@pytest.mark.parametrize("mode", ["jit", "steady"])
def test_a_task_asked_ahead_ends_once_when_its_job_is_cancelled_with_force(mode: str) -> None:
    """A forced cancel of the job: the bound task reports CANCELLED at once and never starts; every task ends once."""
    scheduler, monitor, to_client, deliver = _one_bound_ahead(mode)
    deliver(scheduler.on_client_messages("c", [CancelJob(1, force=True)]))
    assert not monitor.bound
    deliver(monitor.on_task_done("s", 1, 0, Outcome(False, b"", "stopped", CANCELLED)), "monitor")
    assert monitor.running == 0 and monitor.stats["launched"] == RECENT_TASKS + 1  # the warm-up and task 0 only
    assert set(_outcomes(to_client)) == {0, 1, 2, 3} and set(_outcomes(to_client).values()) == {CANCELLED}


@pytest.mark.parametrize("mode", ["jit", "steady"])
def test_a_task_asked_ahead_is_dropped_with_its_lost_scheduler(mode: str) -> None:
    """The node monitor loses its scheduler with a task bound ahead: the bound task is dropped (no one waits
    for it), the queue empties, and the slot frees when the running task ends."""
    _, monitor, _, _ = _one_bound_ahead(mode)
    monitor.on_scheduler_lost("s")
    assert not monitor.bound and monitor.ahead == 0 and len(monitor.queue) == 0
    monitor.on_task_done("s", 1, 0, OK)
    assert monitor.free == 1 and monitor.busy == 0


def _nap(x: int) -> int:
    time.sleep(0.01)
    return x


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["jit", "steady"])
def test_a_node_monitor_sigkilled_with_tasks_bound_ahead_loses_none_and_runs_none_twice(mode: str) -> None:
    """Real processes, LocalCluster(pipeline="jit" or "steady"), 2 node monitors x 1 slot (thread
    executors): 10 ms tasks keep the node's run times steady, so each slot asks its next task just before the
    running one ends (or, steady, at its start); node
    monitor 0 is SIGKILLed once some of the job has run. Every task ends exactly once and ok (those lost with it on a
    second attempt), and the scheduler's outcomes equal its tasks. About 5 s."""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread", pipeline=mode), node_monitors=2, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                job = await client.submit_job([partial(_nap, x) for x in range(300)])
                with trio.fail_after(30):
                    while (await client.status()).counters.get("outcomes", 0) < 60:
                        await trio.sleep(0.01)
                os.kill(cluster.node_monitor_pids[0], signal.SIGKILL)
                with trio.fail_after(60):
                    outcomes = await job.outcomes()
                    counters = (await client.status()).counters
        assert [o.value for o in outcomes] == list(range(300)) and all(o.ok for o in outcomes)
        assert max(o.attempts for o in outcomes) == 2
        assert counters["outcomes"] == counters["tasks"]

    trio.run(main)
