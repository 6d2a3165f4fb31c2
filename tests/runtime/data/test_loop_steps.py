"""A big value never blocks a node monitor's event loop (a 256 MB result once made a node monitor
"lost" under load). In-process services with process executors, one trio loop for all: while a 256 MB
result is made, kept, fetched peer to peer by a dependent on the other node monitor and fetched by the
client, no step of the services' tasks on that loop costs as much CPU as a third of one copy of the value (a trio
Instrument times each step in thread CPU time, which another process's load does not inflate). One frame
of the value decoded or encoded on the loop, as before memory files and in-place chunks, fails it."""

from __future__ import annotations

import gc
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    Constraint,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.data import shared
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic

from ..services.test_services import SECRET

SIZE = 256 * 1024 * 1024


def _zeros(n: int) -> bytes:
    return bytes(n)


def _length(blob: bytes) -> int:
    return len(blob)


class _StepTimer(trio.abc.Instrument):
    """The largest thread CPU time of one task step, and the task that took it; the steps of `caller` (the
    test's own task, which unpickles the value result() gives it) are not counted."""

    def __init__(self) -> None:
        self.caller = None
        self.longest = 0.0
        self.task = ""
        self._start: float | None = None  # None in the step that added it: no start of its own

    def before_task_step(self, task) -> None:
        self._start = time.thread_time()

    def after_task_step(self, task) -> None:
        if self._start is None or task is self.caller:
            return
        spent = time.thread_time() - self._start
        if spent > self.longest:
            self.longest, self.task = spent, task.name


def _copy_cpu() -> float:
    """Thread CPU seconds of one copy of SIZE bytes (its pages touched first), the best of three."""
    source = bytearray(SIZE)
    source[::4096] = b"\1" * len(range(0, SIZE, 4096))
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        copy = bytes(source)
        best = min(best, time.thread_time() - start)
        del copy
    return best


@pytest.mark.slow
@pytest.mark.skipif(not shared.AVAILABLE, reason="memory files (memfd) are Linux only")
def test_no_loop_step_copies_a_256_mb_value_while_it_is_made_fetched_by_a_peer_and_by_the_client():
    """Made on nm0, taken by a dependent pinned to nm1 (a peer-to-peer fetch into a memory file handed to
    nm1's worker) and fetched by result(): every loop step stays under a third of one copy's CPU."""
    copy = _copy_cpu()
    timer = _StepTimer()

    async def main():
        async with trio.open_nursery() as nursery:
            scheduler = SchedulerLogic(seed=3)
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret=SECRET)), logic=scheduler)
            )
            for i in range(2):
                node = NodeMonitorConfig(
                    link=LinkConfig(secret=SECRET), schedulers=[address], node_id=f"nm{i}", slots=1
                )
                await nursery.start(
                    partial(serve_node_monitor, node, logic=NodeMonitorLogic(NodeMonitorConfig(slots=1)))
                )
            async with Client([address], secret=SECRET) as client:
                timer.caller = trio.lowlevel.current_task()
                trio.lowlevel.add_instrument(timer)
                with trio.fail_after(240):
                    made = await client.submit_job(
                        [partial(_zeros, SIZE)], constraints=Constraint(node_monitors=("nm0",))
                    )
                    await made.wait()
                    taken = await client.submit_job(
                        [partial(_length, made[0])], constraints=Constraint(node_monitors=("nm1",))
                    )
                    assert await taken.results() == [SIZE]
                    value = (await made.results())[0]
                    assert len(value) == SIZE
                trio.lowlevel.remove_instrument(timer)
            nursery.cancel_scope.cancel()

    gc.disable()  # a collection of the test process's heap is not the loop's work
    try:
        trio.run(main)
    finally:
        gc.enable()
    assert timer.longest < copy / 3, f"a step of {timer.task} took {timer.longest:.3f} s of CPU; one copy {copy:.3f} s"
