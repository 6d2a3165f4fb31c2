"""The open-loop load at the user's door: Poisson arrivals of 10-task jobs of 10 ms sleeps, offered to any
`concurrent.futures` executor (a job is `SparrowExecutor.submit_many`, or `submit` per task elsewhere, and its end
is seen by `add_done_callback`, as a user's code sees it) or to Sparrow's async `Client`, and the floor every system
is held to: one zero-overhead central FIFO queue over the same slots, replaying the same arrivals with the nominal
durations (not the ones a system's tasks happened to measure), so the floor is the same for every system.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from functools import partial

import numpy as np
import trio

from sparrow_runtime import Client, LocalCluster, SparrowExecutor

JOB_SIZE = 10
TASK_S = 0.010


@dataclass(frozen=True)
class Load:
    """`load` of `slots` slots busy on average: jobs of JOB_SIZE x TASK_S arriving for `seconds` (Poisson, `seed`)."""

    load: float
    slots: int
    seconds: float
    seed: int = 0

    def arrivals(self) -> np.ndarray:
        """Job arrival offsets in seconds, the same for every system given the same Load."""
        if not 0 < self.load < 1 or self.seconds <= 0 or self.slots < 1:
            raise ValueError(f"a load needs 0 < load < 1, seconds > 0 and slots >= 1, got {self}")
        rate = self.load * self.slots / (JOB_SIZE * TASK_S)  # jobs per second
        gaps = np.random.default_rng(self.seed).exponential(1 / rate, int(rate * self.seconds * 2) + 16)
        offsets = np.cumsum(gaps)
        return offsets[offsets < self.seconds]

    def floor(self, arrivals: np.ndarray) -> np.ndarray:
        """Each job's response on the floor: a central FIFO queue over `slots` slots, no overhead, nominal durations."""
        free = [0.0] * self.slots  # when each slot is next free (a heap)
        response = np.empty(len(arrivals))
        for job, arrival in enumerate(arrivals.tolist()):
            end = arrival
            for _ in range(JOB_SIZE):
                start = max(arrival, heapq.heappop(free))
                heapq.heappush(free, start + TASK_S)
                end = max(end, start + TASK_S)
            response[job] = end - arrival
        return response


def beyond_task_ms(response: np.ndarray, q: float = 50) -> float:
    """The q-th percentile of (job response - TASK_S), in ms: what the user waits beyond the task itself."""
    return 1e3 * float(np.percentile(response - TASK_S, q))


def submit_job(executor: Executor, fn: Callable, args: list) -> list[Future]:
    """One job of `fn(a)` for each `a` of `args`, as a user gives it: SparrowExecutor's `submit_many` (one job,
    batch-sampled), a `submit` per task on any other executor."""
    if isinstance(executor, SparrowExecutor):
        return executor.submit_many([(fn, (a,), {}) for a in args])
    return [executor.submit(fn, a) for a in args]


def executor_load(executor: Executor, fn: Callable[[float], object], arrivals: np.ndarray) -> np.ndarray:
    """Each job's response (seconds, arrival order) through `executor`: a job at each arrival offset whatever
    the executor is doing, its end the moment its last task's done-callback runs.

    Error handling: a task that raised fails the benchmark (its exception propagates)."""
    submit_job(executor, fn, [0.0] * JOB_SIZE)[-1].result()  # warm up: workers, connections
    submitted = np.full(len(arrivals), np.nan)
    finished = np.full(len(arrivals), np.nan)
    left = [JOB_SIZE] * len(arrivals)
    lock = threading.Lock()

    def on_done(job: int, _future: Future) -> None:
        now = time.monotonic()
        with lock:
            left[job] -= 1
            if left[job] == 0:
                finished[job] = now

    futures = []
    begin = time.monotonic()
    for job, offset in enumerate(arrivals.tolist()):
        time.sleep(max(0.0, begin + offset - time.monotonic()))
        submitted[job] = time.monotonic()
        for future in submit_job(executor, fn, [TASK_S] * JOB_SIZE):
            future.add_done_callback(partial(on_done, job))
            futures.append(future)
    for future in futures:
        future.result()
    deadline = time.monotonic() + 10.0  # a callback runs just after its future's result is set
    while np.isnan(finished).any() and time.monotonic() < deadline:
        time.sleep(0.001)
    return finished - submitted


def client_load(cluster: LocalCluster, fn: Callable[[float], object], arrivals: np.ndarray) -> np.ndarray:
    """executor_load's figure through Sparrow's async Client on `cluster` (what the executor's path is held to)."""
    return trio.run(_client_load, cluster, fn, arrivals)


async def _client_load(cluster: LocalCluster, fn: Callable[[float], object], arrivals: np.ndarray) -> np.ndarray:
    submitted = np.full(len(arrivals), np.nan)
    finished = np.full(len(arrivals), np.nan)
    async with Client(cluster.schedulers, secret=cluster.secret) as client:
        await (await client.submit_job([partial(fn, 0.0)] * JOB_SIZE)).results()  # warm up

        async def one(job: int) -> None:
            handle = await client.submit_job([partial(fn, TASK_S)] * JOB_SIZE)
            await handle.results()  # raises a task's exception: the figures would not describe the load
            finished[job] = time.monotonic()

        begin = time.monotonic()
        async with trio.open_nursery() as nursery:
            for job, offset in enumerate(arrivals.tolist()):
                await trio.sleep(max(0.0, begin + offset - time.monotonic()))
                submitted[job] = time.monotonic()
                nursery.start_soon(one, job)
    return finished - submitted
