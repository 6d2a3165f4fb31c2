"""The cluster experiment's figures: one run against the ideal and the simulator, and several runs
summarised as a median and a range.

Per run (`run_figures`):
- per query, its response time: from its arrival (its first stages submitted) to its last stage's
  last outcome at the client; beside it the **ideal** (the simulator's omniscient policy replaying
  the run's queries: the same arrivals, the durations the tasks measured, each stage released when
  its parents end, no delay of any kind; the paper's comparison) and the **simulated** response
  (the sparrow policy given the delays the run measured, replay.py);
- per task, its queueing delay: from its stage's submission to its start in a worker, split in two.
  The part spent **waiting for a slot** lasts until the worker that ran it finished its previous
  task (none if that worker was already idle at the submission); the rest is the **network and late
  binding** part: the submission, the reservation, the GetTask round trip, the hop to the worker.

Across runs (`summarise`): each figure's median over the runs, with its lowest and highest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .replay import Hops, ReplayJob, ideal, measure_hops, measured_durations, model
from .run import QueryRecord

RESPONSE_PERCENTILES = (5, 25, 50, 75, 95)
DELAY_PERCENTILES = (50, 95)
MODEL_PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class RunFigures:
    """One run's measurements (seconds) and the replays of its queries."""

    queries: int
    tasks: int
    failed: int
    wall: float  # first arrival to last outcome
    busy: float  # task-seconds run
    slots: int
    response: np.ndarray  # per query
    ideal_response: np.ndarray
    simulated_response: np.ndarray  # per query, every seed of the model pooled
    delay: np.ndarray  # per task that ran
    delay_network: np.ndarray  # its network and late-binding part
    delay_slot: np.ndarray  # its waiting-for-a-slot part
    ideal_delay: np.ndarray  # per task, the ideal's wait in its central queue
    hops: Hops

    @property
    def utilisation(self) -> float:
        return self.busy / (self.wall * self.slots) if self.wall > 0 else math.nan

    @property
    def mean_response_over_ideal(self) -> float:
        return float(np.mean(self.response) / np.mean(self.ideal_response))


def percentiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    if values.size == 0:
        return [math.nan] * len(qs)
    return [float(v) for v in np.percentile(values, qs)]


def replay_trace(records: Sequence[QueryRecord]) -> tuple[list[ReplayJob], list[list[int]]]:
    """The run as a simulator trace (every stage a job at its query's arrival, waiting for its
    parents), and each query's job numbers in it."""
    first = records[0].arrived
    jobs: list[ReplayJob] = []
    numbers: list[list[int]] = []
    for record in records:
        base = len(jobs)
        for stage_record, stage in zip(record.submitted_stages(), record.query.stages, strict=True):
            jobs.append(
                ReplayJob(
                    record.arrived - first, measured_durations(stage_record), tuple(base + p for p in stage.parents)
                )
            )
        numbers.append(list(range(base, len(jobs))))
    return jobs, numbers


def queueing_split(
    ready: np.ndarray, start: np.ndarray, end: np.ndarray, worker: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(network and late-binding part, waiting-for-a-slot part) of each task's delay `start - ready`
    (module docstring), in the order given; each task with its end and the worker that ran it."""
    order = np.lexsort((start, worker))
    previous_end = np.full(len(start), -np.inf)
    same = worker[order][1:] == worker[order][:-1]
    previous_end[order[1:][same]] = end[order][:-1][same]
    delay = start - ready
    slot = np.clip(previous_end - ready, 0.0, delay)
    return delay - slot, slot


def run_figures(records: Sequence[QueryRecord], *, node_monitors: int, slots: int, schedulers: int) -> RunFigures:
    """One run's figures (module docstring). Error handling: ValueError if the run has no query, or
    a query that did not finish."""
    if not records:
        raise ValueError("the run has no query")
    if any(math.isnan(r.finished) for r in records):
        raise ValueError("a query did not finish")
    stages = [s for r in records for s in r.submitted_stages()]
    jobs, numbers = replay_trace(records)
    best = ideal(jobs, node_monitors=node_monitors, slots=slots)
    hops = measure_hops(stages)
    simulated = model(jobs, hops, node_monitors=node_monitors, slots=slots, schedulers=schedulers)
    ready = np.concatenate([np.full(s.n_tasks, s.submitted) for s in stages])
    start = np.concatenate([s.starts for s in stages])
    end = np.concatenate([s.ends for s in stages])
    worker = np.concatenate([s.workers for s in stages])
    ran = ~np.isnan(start)
    network, slot = queueing_split(ready[ran], start[ran], end[ran], worker[ran])

    def per_query(job_response: np.ndarray) -> np.ndarray:  # its stages share its arrival
        return np.array([job_response[n].max() for n in numbers])

    return RunFigures(
        queries=len(records),
        tasks=len(start),
        failed=sum(r.failed for r in records),
        wall=max(r.finished for r in records) - records[0].arrived,
        busy=float(sum(job.durations.sum() for job in jobs)),
        slots=node_monitors * slots,
        response=np.array([r.response for r in records]),
        ideal_response=per_query(best.job_response),
        simulated_response=np.concatenate([per_query(s.job_response) for s in simulated]),
        delay=network + slot,
        delay_network=network,
        delay_slot=slot,
        ideal_delay=best.task_wait[ran],
        hops=hops,
    )


@dataclass(frozen=True)
class Spread:
    """A figure over several runs: its median, lowest and highest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("no run to summarise")
        return cls(float(np.median(values)), float(min(values)), float(max(values)))


def summarise(runs: Sequence[RunFigures], figure: Callable[[RunFigures], float]) -> Spread:
    """`figure` of each run, as a median and a range."""
    return Spread.of([figure(run) for run in runs])
