"""Bound tasks handed ahead to a busy worker (NodeMonitorLogic.on_handed_ahead / on_given_back / `started`,
the node monitor's _hand_ahead): a pinned task starts only where its executor started it, goes back to the
slots if its worker dies first, and a forced cancel or a lost scheduler withdraws it. Logic tests, then real
processes."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.errors import TaskTimeout
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic, Withdraw
from sparrow_runtime.wire.messages import (
    CANCELLED,
    EnqueueReservations,
    Outcome,
    OutcomeToScheduler,
    StopTask,
    TaskToNode,
)

from ..manual_clock import ManualClock

OK = Outcome(True, b"", "")


def _node(slots: int, depth: int = 1) -> NodeMonitorLogic:
    """Mode always (the hand-ahead mechanics from the first task)."""
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, pipeline="always", pipeline_depth=depth), clock=ManualClock(0.0)
    )
    logic.on_scheduler_registered("s")
    return logic


def _of(out: list, kind: type) -> list:
    return [msg for _, msg in out if type(msg) is kind]


def _two_running_one_bound(depth: int = 1) -> NodeMonitorLogic:
    """2 slots running tasks 0 and 1 of job 1, task 2 bound ahead and pinned (handed to a worker)."""
    logic = _node(2, depth)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 4)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b""), TaskToNode(1, 1, b"")])
    logic.on_scheduler_messages("s", [TaskToNode(1, 2, b"")])
    assert [m.task for _, m in logic.bound] == [2]
    logic.on_handed_ahead([("s", 1, 2)])
    return logic


@pytest.mark.parametrize("depth", [1, 16])
def test_a_pinned_task_starts_where_its_executor_started_it_not_in_the_first_slot_to_free(depth: int) -> None:
    """Task 1 ends with nobody behind it: its slot does not take the pinned task 2 (queued behind task 0's
    worker); task 0 ends with task 2 started in its place: task 2 launches then (1 and 16 deep)."""
    logic = _two_running_one_bound(depth)
    out = logic.on_task_done("s", 1, 1, OK)
    assert _of(out, TaskToNode) == [] and len(logic.bound) == 1 and logic.running == 1
    out = logic.on_task_done("s", 1, 0, OK, started=("s", 1, 2))
    assert _of(out, TaskToNode) == [TaskToNode(1, 2, b"")] and not logic.bound and not logic.pinned
    assert logic.running == 1 and logic.stats["launched"] == 3


def test_a_pinned_task_given_back_unstarted_takes_the_next_free_slot() -> None:
    """Its worker died before it started (on_given_back): it is an ordinary bound task again and starts in the
    slot the dead worker's task frees."""
    logic = _two_running_one_bound()
    assert _of(logic.on_given_back([("s", 1, 2)]), TaskToNode) == []  # no slot free yet
    out = logic.on_task_done("s", 1, 0, Outcome(False, b"", "its worker died", 3))
    assert _of(out, TaskToNode) == [TaskToNode(1, 2, b"")] and not logic.pinned


def test_a_forced_cancel_of_a_pinned_task_reports_it_cancelled_once_and_withdraws_it() -> None:
    logic = _two_running_one_bound()
    out = logic.on_scheduler_messages("s", [StopTask(1, 2)])
    (reported,) = _of(out, OutcomeToScheduler)
    assert (reported.task, reported.outcome.failure) == (2, CANCELLED)
    assert _of(out, Withdraw) == [Withdraw(1, 2)] and not logic.bound and not logic.pinned
    assert _of(logic.on_task_done("s", 1, 0, OK, started=("s", 1, 2)), TaskToNode) == []  # never launched


def test_a_lost_scheduler_withdraws_its_pinned_tasks() -> None:
    logic = _two_running_one_bound()
    out = logic.on_scheduler_lost("s")
    assert _of(out, Withdraw) == [Withdraw(1, 2)] and not logic.bound and not logic.pinned


def test_a_task_that_waited_for_a_worker_has_its_timeout_from_when_it_started() -> None:
    """A task launched at t=0 with a 2 s timeout that waits for a replacement worker until t=5
    (`on_started_late`): not stopped at 6.9 s, stopped at 7 s."""
    logic = _node(1)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"", 2.0)])
    logic.clock.now = 5.0
    logic.on_started_late(("s", 1, 0))
    logic.clock.now = 6.9
    assert logic.on_timer() == []
    logic.clock.now = 7.0
    assert [(m.job_id, m.task) for _, m in logic.on_timer()] == [(1, 0)]


def _count_then(path: str, value: int, nap: float = 0.0) -> int:
    """Note one run of task `value` in `path` (a file per task), nap, return `value`."""
    with open(path, "a") as f:
        f.write("x")
    time.sleep(nap)
    return value


def _count_then_die_once(path: str, value: int) -> int:
    """The first run kills its own worker process (after a nap, tasks queued behind it); the second returns."""
    with open(path, "a") as f:
        f.write("x")
    if os.path.getsize(path) == 1:
        time.sleep(0.05)
        os._exit(9)
    return value


@pytest.mark.slow
def test_a_worker_killed_with_tasks_handed_ahead_loses_none_and_runs_none_twice(tmp_path: Path) -> None:
    """Real processes, LocalCluster(pipeline_depth=16), 2 node monitors x 1 slot, process
    executors: 400 short tasks, of which task 150 kills its worker the first time it runs (tasks are queued
    behind it in that worker). Every task ends once and ok; task 150 on a second attempt, every other task
    ran exactly once (its file has one mark): those queued behind the dead worker's task were given back
    unstarted and ran once elsewhere or on the replacement, with no attempt counted."""
    n, killer = 400, 150

    def task(i: int):
        path = str(tmp_path / f"t{i}")
        return partial(_count_then_die_once, path, i) if i == killer else partial(_count_then, path, i, 0.001)

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process", pipeline_depth=16),
            node_monitors=2,
            slots=1,
            dashboard=False,
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                job = await client.submit_job([task(i) for i in range(n)])
                with trio.fail_after(120):
                    outcomes = await job.outcomes()
        assert [o.value for o in outcomes] == list(range(n)) and all(o.ok for o in outcomes)
        assert [i for i, o in enumerate(outcomes) if o.attempts != 1] == [killer]
        runs = {i: len((tmp_path / f"t{i}").read_text()) for i in range(n)}
        assert {i: k for i, k in runs.items() if k != 1} == {killer: 2}

    trio.run(main)


@pytest.mark.slow
def test_a_task_past_its_timeout_with_tasks_behind_it_ends_timed_out_and_they_run_once(tmp_path: Path) -> None:
    """Real processes, one node monitor x 1 slot pipelined, the gate off (nothing ran here yet): a task that sleeps
    past its job's 2 s timeout,
    and a second job of 5 short tasks reserved behind it (one bound and handed to its worker): the first
    ends TIMED_OUT once (retries=0), the 5 ok once each, none on a second attempt (the one queued in the
    killed worker was given back unstarted)."""

    async def main() -> None:
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process", pipeline="always"),
            node_monitors=1,
            slots=1,
            dashboard=False,
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                slow = await client.submit_job(
                    [partial(_count_then, str(tmp_path / "t0"), 0, 60)], timeout=2.0, retries=0
                )
                await trio.sleep(0.5)  # it runs
                tasks = [partial(_count_then, str(tmp_path / f"t{i}"), i, 0.05) for i in range(1, 6)]
                short = await client.submit_job(tasks, probe_ratio=1.0)
                with trio.fail_after(60):
                    (first,) = await slow.outcomes()
                    outcomes = await short.outcomes()
        assert isinstance(first.exception, TaskTimeout) and first.attempts == 1
        assert [o.value for o in outcomes] == [1, 2, 3, 4, 5] and all(o.attempts == 1 for o in outcomes)
        assert all(len((tmp_path / f"t{i}").read_text()) == 1 for i in range(1, 6))

    trio.run(main)


def test_bound_tasks_are_pinned_with_one_slot_or_short_recent_tasks_only() -> None:
    """One slot: always (its worker is the only place to start); two slots 16 deep: only once the recent
    tasks ran under 5 ms (else a pinned task could wait out a long one while the other slot frees)."""
    assert _node(1).may_pin and _node(1, 16).may_pin
    assert not _node(2).may_pin and not _node(2, 16).may_pin
    logic = _node(2, 16)
    for task in range(8):  # 8 tasks of 1 ms
        logic.on_scheduler_messages("s", [EnqueueReservations(9, "u", 0, 1)])
        logic.on_scheduler_messages("s", [TaskToNode(9, task, b"")])
        logic.clock.now += 0.001
        logic.on_task_done("s", 9, task, OK)
    assert logic.may_pin
