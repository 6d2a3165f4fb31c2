"""Closing a client returns within a second whatever it is doing, here while it reconnects to a
frozen (SIGSTOPped) scheduler whose handshake would only time out, and every task without an outcome
ends cancelled: `async with Client` and `SparrowExecutor.shutdown`, with real processes on loopback
(`sparrow submit` with one Ctrl-C: tests/cli/test_submit_control.py)."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig, SparrowExecutor
from sparrow_runtime.errors import TaskCancelled

CLOSE_BOUND = 1.0  # seconds closing may take (docs/runtime-limits.md, "Limits and failure behaviour")
SCHEDULER_TIMEOUT = 0.3


@contextmanager
def one_scheduler() -> Iterator[tuple[LocalCluster, Callable[[], None]]]:
    """A cluster of one scheduler and a `freeze()` that SIGSTOPs it (SIGCONT again at the end)."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), schedulers=1, node_monitors=1, slots=1, dashboard=False
    ) as cluster:
        pid = cluster.pids[0]
        frozen = []

        def freeze() -> None:
            os.kill(pid, signal.SIGSTOP)
            frozen.append(pid)

        try:
            yield cluster, freeze
        finally:
            if frozen:
                os.kill(pid, signal.SIGCONT)


def reconnecting(client: Client) -> bool:
    """The client lost its scheduler and is trying to connect again (it has only the frozen one)."""
    return bool(client.failovers) and client.connected_to is None


@pytest.mark.slow
def test_leaving_async_with_client_while_it_reconnects_takes_under_a_second_and_cancels_what_is_left():
    async def main():
        with one_scheduler() as (cluster, freeze):
            async with Client(cluster.schedulers, secret=cluster.secret, scheduler_timeout=SCHEDULER_TIMEOUT) as client:
                job = await client.submit_job([partial(time.sleep, 5)])
                await trio.sleep(0.3)  # running
                freeze()
                with trio.fail_after(10):
                    while not reconnecting(client):
                        await trio.sleep(0.01)
                await trio.sleep(0.2)  # in the middle of the handshake with the frozen scheduler
                started = time.monotonic()
            elapsed = time.monotonic() - started
        assert elapsed < CLOSE_BOUND, f"closing took {elapsed:.2f} s"
        [outcome] = await job.outcomes()
        assert isinstance(outcome.exception, TaskCancelled) and "closed" in str(outcome.exception)

    trio.run(main)


@pytest.mark.slow
def test_shutting_down_an_executor_while_it_reconnects_takes_under_a_second():
    """With nothing pending, shutdown() (wait=True); with a running task cancelled with force, shutdown()."""
    with one_scheduler() as (cluster, freeze):
        idle = SparrowExecutor(cluster.schedulers, secret=cluster.secret, scheduler_timeout=SCHEDULER_TIMEOUT)
        busy = SparrowExecutor(cluster.schedulers, secret=cluster.secret, scheduler_timeout=SCHEDULER_TIMEOUT)
        assert idle.submit(abs, -1).result(timeout=30) == 1
        future = busy.submit(time.sleep, 5)
        time.sleep(0.3)
        freeze()
        deadline = time.monotonic() + 10
        while not (reconnecting(idle.client) and reconnecting(busy.client)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reconnecting(idle.client) and reconnecting(busy.client)
        time.sleep(0.2)
        assert future.cancel(force=True)
        for executor, kwargs in ((idle, {}), (busy, {"cancel_futures": True})):
            started = time.monotonic()
            executor.shutdown(**kwargs)
            elapsed = time.monotonic() - started
            assert elapsed < CLOSE_BOUND, f"shutdown({kwargs}) took {elapsed:.2f} s"
        assert future.cancelled()


@pytest.mark.slow
def test_an_executor_closed_without_waiting_while_it_reconnects_ends_its_pending_tasks_cancelled():
    """A running task cancelled with force, then shutdown(wait=False): the future is cancelled at once,
    and the thread ends within the bound (not cancelled, the task would wait for the scheduler)."""
    with one_scheduler() as (cluster, freeze):
        executor = SparrowExecutor(cluster.schedulers, secret=cluster.secret, scheduler_timeout=SCHEDULER_TIMEOUT)
        future = executor.submit(time.sleep, 5)
        time.sleep(0.3)
        freeze()
        deadline = time.monotonic() + 10
        while not reconnecting(executor.client) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.cancel(force=True)  # it runs: only a forced cancel ends it
        executor.shutdown(wait=False)
        done, _ = concurrent.futures.wait([future], timeout=CLOSE_BOUND)
        assert done and future.cancelled()
        started = time.monotonic()
        executor.shutdown()  # now waits for its trio thread to end
        assert time.monotonic() - started < CLOSE_BOUND
