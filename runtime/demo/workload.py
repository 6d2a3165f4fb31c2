"""The workload of `sparrow local --demo`: short parallel jobs arriving at random, run on a cluster.

`make_workload` draws jobs of `min_tasks`..`max_tasks` tasks whose durations are uniform in
[1 - spread, 1 + spread] x `task_ms` (spread 0.5 by default; 0: every task `task_ms`), arriving as a
Poisson process whose rate offers `load` of the cluster's slots. `run_workload` submits each job at
its arrival time through one `Client` and records, per job, when it was submitted and when its last
outcome arrived, and per task when it started and ended in its worker and which worker (slot) ran it.
Tasks (task.py) sleep: they hold a slot, not a CPU, so the demo measures scheduling, not the
machine's cores. Every time is `time.monotonic()`, one clock for every process of the host.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import trio

from ..client.core import Client, build_submit
from ..wire.messages import Outcome
from ..wire.task_codec import pack_task, unpack_outcome
from ..wire.tls import TLS
from .task import demo_task

WARMUP_TASKS_PER_SLOT = 2


@dataclass(frozen=True)
class Workload:
    """Jobs in arrival order: arrival offsets (seconds) and each job's task durations (seconds)."""

    arrivals: np.ndarray
    durations: list[np.ndarray]

    @property
    def n_tasks(self) -> int:
        return sum(len(d) for d in self.durations)


def make_workload(
    *,
    load: float,
    duration: float,
    slots: int,
    min_tasks: int,
    max_tasks: int,
    task_ms: float,
    seed: int | None,
    spread: float = 0.5,
) -> Workload:
    """Jobs arriving during `duration` seconds at the rate that keeps `load` of `slots` busy.

    Error handling: ValueError naming the bad argument (min_tasks > max_tasks, load outside (0, 1),
    spread outside [0, 1)).
    """
    if min_tasks > max_tasks:
        raise ValueError(f"min_tasks ({min_tasks}) must not exceed max_tasks ({max_tasks})")
    if not 0 < load < 1:
        raise ValueError(f"load must be in (0, 1), got {load}")
    if not 0 <= spread < 1:
        raise ValueError(f"spread must be in [0, 1), got {spread}")
    rng = np.random.default_rng(seed)
    mean_task = task_ms / 1000.0
    rate = load * slots / ((min_tasks + max_tasks) / 2 * mean_task)  # jobs per second
    gaps = rng.exponential(1.0 / rate, math.ceil(rate * duration * 1.5) + 10)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps)))
    arrivals = arrivals[arrivals < duration]  # the first job arrives at 0
    sizes = rng.integers(min_tasks, max_tasks + 1, len(arrivals))
    durations = [rng.uniform((1 - spread) * mean_task, (1 + spread) * mean_task, int(m)) for m in sizes]
    return Workload(arrivals, durations)


@dataclass
class JobRecord:
    """One job as it ran: submitted and finished (its last outcome at the client) by the client's
    clock, and per task its start, end and worker (demo_task's; NaN / -1 for a task that failed)."""

    submitted: float
    n_tasks: int
    starts: np.ndarray
    ends: np.ndarray
    finished: float = math.nan
    failed: int = 0
    n_done: int = 0
    errors: list[str] = field(default_factory=list)
    workers: np.ndarray | None = None

    @classmethod
    def submitted_now(cls, n_tasks: int) -> JobRecord:
        return cls(
            time.monotonic(),
            n_tasks,
            np.full(n_tasks, np.nan),
            np.full(n_tasks, np.nan),
            workers=np.full(n_tasks, -1, dtype=np.int64),
        )

    def on_outcome(self, task: int, outcome: Outcome) -> bool:
        """Record task `task`'s outcome (a demo_task's); returns whether the job is now complete."""
        now = time.monotonic()
        workers = self.workers
        assert workers is not None  # submitted_now gives a live record its array
        try:
            self.starts[task], self.ends[task], workers[task] = unpack_outcome(outcome)
        except Exception as exc:
            self.failed += 1
            self.errors.append(f"{type(exc).__name__}: {exc}")
        self.n_done += 1
        if self.n_done == self.n_tasks:
            self.finished = now
            return True
        return False


@dataclass
class Progress:
    """What `run_workload` has done so far (read by the progress display)."""

    jobs_total: int
    tasks_total: int
    jobs_submitted: int = 0
    jobs_done: int = 0
    tasks_done: int = 0
    tasks_failed: int = 0


async def run_workload(
    schedulers: list[str],
    secret: str | bytes,
    workload: Workload,
    *,
    slots: int,
    on_progress: Callable[[Progress], None] = lambda p: None,
    progress_interval: float = 0.1,
    tls: TLS | None = None,
) -> list[JobRecord]:
    """Run `workload` (after a warm-up job of a few tasks per slot, not recorded); returns its jobs.
    The client authenticates with `tls` if given, else with `secret`.

    `on_progress` is called every `progress_interval` seconds and once at the end.
    """
    progress = Progress(len(workload.arrivals), workload.n_tasks)
    async with Client(schedulers, **({"tls": tls} if tls is not None else {"secret": secret})) as client:
        warmup = await client.submit_job([partial(demo_task, 0.0)] * (slots * WARMUP_TASKS_PER_SLOT))
        await warmup.results()
        records: list[JobRecord] = []
        all_done = trio.Event()

        async def report() -> None:
            while True:
                on_progress(progress)
                await trio.sleep(progress_interval)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(report)
            start = trio.current_time()
            for offset, durations in zip(workload.arrivals.tolist(), workload.durations, strict=True):
                await trio.sleep_until(start + offset)
                msg = build_submit([pack_task(demo_task, (d,)) for d in durations.tolist()], "", 0, None, None)
                record = JobRecord.submitted_now(len(durations))
                records.append(record)
                client.send_job(msg, _recorder(record, progress, all_done))
                progress.jobs_submitted += 1
            await all_done.wait()
            nursery.cancel_scope.cancel()
    on_progress(progress)
    return records


def _recorder(record: JobRecord, progress: Progress, all_done: trio.Event) -> Callable[[int, Outcome], None]:
    def on_outcome(task: int, outcome: Outcome) -> None:
        failed = record.failed
        complete = record.on_outcome(task, outcome)
        progress.tasks_failed += record.failed - failed
        progress.tasks_done += 1
        if complete:
            progress.jobs_done += 1
            if progress.jobs_done == progress.jobs_total:
                all_done.set()

    return on_outcome
