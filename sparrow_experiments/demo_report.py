"""The numbers of `sparrow local --demo`: what the runtime achieved, against an ideal scheduler fed
the same arrivals and against the simulator's prediction of this very run.

The ideal is the simulator's `omniscient` policy (`sparrow_core.sim`, the same kernels): one
infinitely fast central queue that starts a task the moment any of the cluster's slots is free,
with no network delay. It replays a trace of the demo itself: each job at the moment it was
submitted, with the durations its tasks measured in their workers. Whatever the runtime adds
(messages, probes, queueing at the wrong node monitor, Python) is the gap between the two.
The simulated column replays the same trace with the `sparrow` policy and the delays this run
measured (replay.py): how far the runtime is from its model.

- scheduling delay of a task: from its job's submission to the task's start in a worker;
- job response time: from submission to the arrival of its last outcome at the client (ideal:
  to the end of its last task).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sparrow_runtime.demo.workload import JobRecord

from .replay import Hops, ideal, measure_hops, model, replay_jobs

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
    simulated_response: np.ndarray = field(default_factory=lambda: np.empty(0))  # the model's jobs, all seeds
    simulated_delay: np.ndarray = field(default_factory=lambda: np.empty(0))
    hops: Hops | None = None  # what the model was given (None: too few tasks to measure)

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


def build_report(records: list[JobRecord], *, node_monitors: int, slots: int, schedulers: int = 1) -> DemoReport:
    """Summarise the demo's jobs and replay them on the ideal scheduler and on the model (`slots` per
    node monitor)."""
    if not records:
        raise ValueError("the demo ran no job")
    first = records[0].submitted
    jobs = replay_jobs(records)
    durations = [job.durations for job in jobs]
    best = ideal(jobs, node_monitors=node_monitors, slots=slots)
    delay = np.concatenate([r.starts - r.submitted for r in records])
    ideal_delay = best.task_wait[~np.isnan(delay)]
    hops: Hops | None
    try:
        hops = measure_hops(records)
    except ValueError:
        hops = None
    simulated = (
        [] if hops is None else model(jobs, hops, node_monitors=node_monitors, slots=slots, schedulers=schedulers)
    )
    outside_queue = 0.0 if hops is None else hops.outside_queue
    return DemoReport(
        jobs=len(records),
        tasks=sum(r.n_tasks for r in records),
        failed=sum(r.failed for r in records),
        wall=max(r.finished for r in records) - first,
        busy=float(sum(d.sum() for d in durations)),
        slots=node_monitors * slots,
        response=np.array([r.finished - r.submitted for r in records]),
        ideal_response=best.job_response,
        delay=delay[~np.isnan(delay)],
        ideal_delay=ideal_delay,
        errors=[e for r in records for e in r.errors][:5],
        simulated_response=np.concatenate([np.empty(0)] + [s.job_response for s in simulated]),
        simulated_delay=np.concatenate([np.empty(0)] + [s.task_wait + outside_queue for s in simulated]),
        hops=hops,
    )
