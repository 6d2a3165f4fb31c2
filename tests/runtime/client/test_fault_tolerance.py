"""Fault tolerance and task control with real processes on loopback: a client fails over when its
scheduler is killed or frozen, a lost node monitor's tasks are retried elsewhere, cancel and
timeouts stop what they should, map keeps a bounded number of tasks in flight, and retries end.
Every task ends with exactly one outcome (the client refuses a second one)."""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

import pytest
import trio

from sparrow_runtime import (
    Client,
    LinkConfig,
    LocalCluster,
    NodeMonitorConfig,
    SchedulerConfig,
    SparrowExecutor,
    TaskFailed,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.errors import TaskCancelled, TaskTimeout

SECRET = "fault-tolerance-secret"


def _slow_square(x: int) -> int:
    time.sleep(0.005)
    return x * x


def _touch_then_sleep(path: str, seconds: float) -> str:
    Path(path).write_text("ran")
    time.sleep(seconds)
    return path


def _scheduler_pid(cluster: LocalCluster, address: str) -> int:
    return cluster.pids[cluster.schedulers.index(address)]


@pytest.mark.slow
@pytest.mark.parametrize("tls", [False, True], ids=["insecure", "tls"])
@pytest.mark.parametrize("fault", ["SIGKILL", "SIGSTOP"])
def test_a_map_survives_its_scheduler_killed_or_frozen_with_two_listed(fault, tls):
    """The client notices (scheduler_timeout 0.5 s), connects to the other scheduler and relaunches
    what had no outcome: every value comes, once, in order (on TLS as on the shared secret)."""
    cluster = LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"),
        schedulers=2,
        node_monitors=2,
        slots=2,
        dashboard=False,
        tls=tls,
    )
    with cluster, SparrowExecutor(cluster.schedulers, **cluster.credentials, scheduler_timeout=0.5) as ex:
        results = ex.map(_slow_square, range(600), chunksize=20, buffersize=200)
        got = [next(results) for _ in range(60)]
        first = ex.client.connected_to
        victim = _scheduler_pid(cluster, first)
        os.kill(victim, getattr(signal, fault))
        try:
            got += list(results)
        finally:
            if fault == "SIGSTOP":
                os.kill(victim, signal.SIGCONT)
        assert got == [x * x for x in range(600)]
        (failover,) = ex.client.failovers
        assert failover.scheduler == first and failover.to not in (None, first)
        assert failover.connected_at - failover.lost_at < 1.0 and failover.relaunched > 0


@pytest.mark.slow
@pytest.mark.parametrize("tls", [False, True], ids=["insecure", "tls"])
def test_a_killed_node_monitors_running_tasks_are_retried_elsewhere(tls):
    """A node monitor killed while running a task: the task is retried on the other one, once."""

    async def main():
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=2, slots=1, dashboard=False, tls=tls
        ) as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                job = await client.submit_job([partial(time.sleep, 1.5)] * 2, probe_ratio=1.0)
                await trio.sleep(0.7)  # both running, one per node monitor
                os.kill(cluster.node_monitor_pids[0], signal.SIGKILL)
                with trio.fail_after(30):
                    outcomes = await job.outcomes()
        assert [o.ok for o in outcomes] == [True, True]
        assert sorted(o.attempts for o in outcomes) == [1, 2]

    trio.run(main)


def test_cancel_a_queued_task_never_runs_and_a_running_one_is_dropped_or_stopped(tmp_path):
    """1 slot: A runs, B waits. Cancelling B: it never runs. Cancelling A without force: its outcome
    is 'cancelled' at once but it keeps the slot to its end; with force its worker is killed and the
    slot is free for the next job at once."""

    async def main():
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                for force in (False, True):
                    a, b = tmp_path / f"a-{force}", tmp_path / f"b-{force}"
                    running = await client.submit_job([partial(_touch_then_sleep, str(a), 3.0)])
                    queued = await client.submit_job([partial(_touch_then_sleep, str(b), 0.0)])
                    with trio.fail_after(10):
                        while not a.exists():
                            await trio.sleep(0.02)
                    queued.cancel()
                    running.cancel(force=force)
                    with trio.fail_after(5):
                        for job in (queued, running):
                            (outcome,) = await job.outcomes()
                            assert isinstance(outcome.exception, TaskCancelled)
                    started = trio.current_time()
                    with trio.fail_after(10):
                        after = await client.submit_job([partial(int, 7)])
                        assert await after.results() == [7]
                    waited = trio.current_time() - started
                    assert not b.exists()  # the queued task never ran
                    assert (waited < 2.0) if force else (waited > 1.0)  # forced: the slot came back at once

    trio.run(main)


def test_a_task_past_its_timeout_is_stopped_and_its_slot_reused():
    async def main():
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                job = await client.submit_job([partial(time.sleep, 60)], timeout=0.5)
                with trio.fail_after(20):
                    (outcome,) = await job.outcomes()
                assert isinstance(outcome.exception, TaskTimeout) and "timeout of 0.5 s" in str(outcome.exception)
                assert outcome.attempts == 1  # a timeout is not retried
                again = await client.submit_job([partial(int, 5)])
                with trio.fail_after(10):
                    assert await again.results() == [5]

    trio.run(main)


def test_a_map_over_a_large_lazy_iterable_keeps_a_bounded_number_of_tasks_in_flight():
    pulled = 0

    def items():
        nonlocal pulled
        for i in range(3000):
            pulled += 1
            yield i

    with (
        LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=2, slots=2, dashboard=False
        ) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        yielded, most = 0, 0
        for value in ex.map(abs, items(), chunksize=50, buffersize=300):
            assert value == yielded
            yielded += 1
            most = max(most, pulled - yielded)  # taken from the iterable, not yet handed out
    assert yielded == 3000 and most <= 300


def test_retries_end_with_the_last_failure_and_count_every_attempt():
    async def main():
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=1, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                job = await client.submit_job([partial(os._exit, 3)], retries=2)
                with trio.fail_after(30):
                    (outcome,) = await job.outcomes()
                assert isinstance(outcome.exception, TaskFailed) and "exit status 3" in str(outcome.exception)
                assert outcome.attempts == 3
                none = await client.submit_job([partial(os._exit, 3)], retries=0)
                with trio.fail_after(30):
                    assert (await none.outcomes())[0].attempts == 1

    trio.run(main)


def test_a_client_with_no_scheduler_left_fails_what_is_pending_and_recovers_when_one_is_back():
    async def main():
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def scheduler(port=0, task_status=trio.TASK_STATUS_IGNORED):
                with scope:
                    await serve_scheduler(
                        SchedulerConfig(link=LinkConfig(secret=SECRET), port=port), task_status=task_status
                    )

            address = await nursery.start(scheduler)
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret=SECRET), schedulers=[address], executor="thread"),
                )
            )
            async with Client([address], secret=SECRET, scheduler_timeout=0.5) as client:
                job = await client.submit_job([partial(time.sleep, 5)])
                scope.cancel()
                with trio.fail_after(10):
                    (outcome,) = await job.outcomes()
                assert "no scheduler reachable" in str(outcome.exception)
                scope = trio.CancelScope()
                await nursery.start(scheduler, address[1])
                with trio.fail_after(20):  # the node monitor redials it, the client reconnects
                    job = await client.submit_job([partial(int, 9)])
                    assert await job.results() == [9]
            nursery.cancel_scope.cancel()

    trio.run(main)
