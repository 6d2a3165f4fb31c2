"""The numbers of `sparrow local --demo`: what the runtime achieved, against an ideal scheduler fed
the same arrivals.

The ideal is the simulator's `omniscient` policy (`sparrow_core.sim`, the same kernels): one
infinitely fast central queue that starts a task the moment any of the cluster's slots is free,
with no network delay. It replays a trace of the demo itself: each job at the moment it was
submitted, with the durations its tasks measured in their workers. Whatever the runtime adds
(messages, probes, queueing at the wrong node monitor, Python) is the gap between the two.

- scheduling delay of a task: from its job's submission to the task's start in a worker;
- job response time: from submission to the arrival of its last outcome at the client (ideal:
  to the end of its last task).
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from sparrow_core.sim import SimConfig, simulate

from .workload import JobRecord

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class DemoReport:
    jobs: int
    tasks: int
    failed: int
    wall: float  # first submission to last outcome, seconds
    busy: float  # task-seconds run
    slots: int
    response: np.ndarray  # per job, seconds
    ideal_response: np.ndarray
    delay: np.ndarray  # per task that ran, seconds
    ideal_delay: np.ndarray
    errors: list[str]

    @property
    def throughput(self) -> float:
        return self.tasks / self.wall if self.wall > 0 else math.nan

    @property
    def utilisation(self) -> float:
        """Fraction of slot time spent running tasks."""
        return self.busy / (self.wall * self.slots) if self.wall > 0 else math.nan

    @property
    def mean_response_over_ideal(self) -> float:
        ideal = float(np.mean(self.ideal_response))
        return float(np.mean(self.response)) / ideal if ideal > 0 else math.nan


def percentiles(values: np.ndarray) -> list[float]:
    if values.size == 0:
        return [math.nan] * len(PERCENTILES)
    return [float(v) for v in np.percentile(values, PERCENTILES)]


def build_report(records: list[JobRecord], *, node_monitors: int, slots: int) -> DemoReport:
    """Summarise the demo's jobs and replay them on the ideal scheduler (`slots` per node monitor)."""
    if not records:
        raise ValueError("the demo ran no job")
    first = records[0].submitted
    durations = [np.nan_to_num(r.ends - r.starts, nan=0.0).clip(min=0.0) for r in records]
    ideal = _ideal(records, durations, first, node_monitors, slots)
    delay = np.concatenate([r.starts - r.submitted for r in records])
    ideal_delay = ideal.task_wait[~np.isnan(delay)]
    return DemoReport(
        jobs=len(records),
        tasks=sum(r.n_tasks for r in records),
        failed=sum(r.failed for r in records),
        wall=max(r.finished for r in records) - first,
        busy=float(sum(d.sum() for d in durations)),
        slots=node_monitors * slots,
        response=np.array([r.finished - r.submitted for r in records]),
        ideal_response=ideal.job_response,
        delay=delay[~np.isnan(delay)],
        ideal_delay=ideal_delay,
        errors=[e for r in records for e in r.errors][:5],
    )


def _ideal(records: list[JobRecord], durations: list[np.ndarray], first: float, node_monitors: int, slots: int):
    fd, path = tempfile.mkstemp(prefix="sparrow-demo-", suffix=".trace")
    try:
        with os.fdopen(fd, "w") as f:
            for record, d in zip(records, durations, strict=True):
                f.write(f"{record.submitted - first:.9f} {len(d)} {' '.join(f'{x:.9f}' for x in d.tolist())}\n")
        config = SimConfig(policy="omniscient", n_workers=node_monitors, slots=slots, network_delay=0.0, trace=path)
        return simulate(config)
    finally:
        os.unlink(path)
