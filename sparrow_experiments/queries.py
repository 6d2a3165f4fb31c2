"""TPC-H-like queries for the cluster experiment: each query a DAG of stages, each stage one job.

The paper ran TPC-H queries compiled by Shark into stages: wide scans of the large tables, narrower
joins, a one-task aggregation at the end. The four templates below have that shape (the names are
the TPC-H queries they resemble; the widths and durations are ours, not measured from Shark):

- q6: scan lineitem -> aggregate;
- q4 and q12: scan orders, scan lineitem -> join -> aggregate (q4 sorts, q12 counts);
- q3: scan customer, scan orders -> join; that and scan lineitem -> join -> top 10.

A stage's width is a fraction of the cluster's slots (at least 1 task), so the queries keep their
shape on any cluster size; its tasks last a mean of the stage's milliseconds each, drawn from a
lognormal (sigma LOGNORMAL_SIGMA: data partitions differ in size) and scaled by `time_scale`. Tasks
sleep (they hold a slot, not a CPU), so 2 cores can emulate tens of slots. Queries arrive as a
Poisson process at the rate that offers `load` of the slots; each picks a template at random.
Everything is drawn from `seed`: the same seed gives the same queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LOGNORMAL_SIGMA = 0.3

# template -> stages: (name, width as a fraction of the slots (0: one task), mean task ms, parents)
TEMPLATES: dict[str, tuple[tuple[str, float, float, tuple[int, ...]], ...]] = {
    "q3": (
        ("scan customer", 1 / 16, 50.0, ()),
        ("scan orders", 1 / 8, 80.0, ()),
        ("join customer-orders", 1 / 16, 60.0, (0, 1)),
        ("scan lineitem", 1 / 4, 120.0, ()),
        ("join lineitem", 1 / 16, 60.0, (2, 3)),
        ("top 10", 0, 20.0, (4,)),
    ),
    "q4": (
        ("scan orders", 1 / 8, 80.0, ()),
        ("scan lineitem", 1 / 4, 120.0, ()),
        ("semi-join", 1 / 16, 60.0, (0, 1)),
        ("sort", 0, 20.0, (2,)),
    ),
    "q6": (
        ("scan lineitem", 1 / 4, 120.0, ()),
        ("aggregate", 0, 20.0, (0,)),
    ),
    "q12": (
        ("scan lineitem", 1 / 4, 120.0, ()),
        ("scan orders", 1 / 8, 80.0, ()),
        ("join", 1 / 16, 60.0, (0, 1)),
        ("count", 0, 20.0, (2,)),
    ),
}


@dataclass(frozen=True)
class Stage:
    """One stage of a query: a job of `len(durations)` tasks (seconds each), released once the
    stages `parents` (indexes of earlier stages of its query) have finished."""

    name: str
    durations: np.ndarray
    parents: tuple[int, ...]


@dataclass(frozen=True)
class Query:
    """A query arriving at `arrival` (seconds from the start); its last stage is its only sink."""

    arrival: float
    template: str
    stages: tuple[Stage, ...]

    @property
    def n_tasks(self) -> int:
        return sum(len(s.durations) for s in self.stages)

    @property
    def work(self) -> float:
        """Slot-seconds its tasks hold."""
        return float(sum(s.durations.sum() for s in self.stages))


@dataclass(frozen=True)
class QueryWorkload:
    queries: tuple[Query, ...]
    slots: int
    seconds: float

    @property
    def n_tasks(self) -> int:
        return sum(q.n_tasks for q in self.queries)

    @property
    def n_stages(self) -> int:
        return sum(len(q.stages) for q in self.queries)

    @property
    def offered_load(self) -> float:
        """The slot time the queries ask for over the slot time of the arrival period."""
        return sum(q.work for q in self.queries) / (self.seconds * self.slots)


def stage_widths(template: str, slots: int) -> list[int]:
    """The number of tasks of each stage of `template` on a cluster of `slots` slots."""
    return [max(1, round(fraction * slots)) for _, fraction, _, _ in TEMPLATES[template]]


def mean_work(template: str, slots: int, time_scale: float = 1.0) -> float:
    """The expected slot-seconds of one query of `template`."""
    means = [ms / 1e3 * time_scale for _, _, ms, _ in TEMPLATES[template]]
    return float(sum(w * m for w, m in zip(stage_widths(template, slots), means, strict=True)))


def check_workload(load: float, seconds: float, slots: int, time_scale: float) -> None:
    """ValueError naming the first bad argument of a workload: the load, its seconds, the slots, the time scale."""
    if not 0 < load < 1:
        raise ValueError(f"load must be in (0, 1), got {load}")
    if not 0 < seconds < math.inf:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise ValueError(f"slots must be an int >= 1, got {slots!r}")
    if not 0 < time_scale < math.inf:
        raise ValueError(f"time_scale must be > 0, got {time_scale}")


def make_queries(*, load: float, seconds: float, slots: int, seed: int, time_scale: float = 1.0) -> QueryWorkload:
    """Queries arriving during `seconds` at the rate that offers `load` of `slots` (module docstring).

    Error handling: ValueError naming the bad argument.
    """
    check_workload(load, seconds, slots, time_scale)
    names = sorted(TEMPLATES)
    rng = np.random.default_rng(seed)
    rate = load * slots / np.mean([mean_work(name, slots, time_scale) for name in names])  # queries per second
    gaps = rng.exponential(1.0 / rate, math.ceil(rate * seconds * 1.5) + 10)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps)))
    arrivals = arrivals[arrivals < seconds]
    queries = []
    for arrival in arrivals.tolist():
        name = names[int(rng.integers(len(names)))]
        stages = []
        for (stage, _, ms, parents), width in zip(TEMPLATES[name], stage_widths(name, slots), strict=True):
            mean = ms / 1e3 * time_scale
            mu = math.log(mean) - LOGNORMAL_SIGMA**2 / 2  # the lognormal's mean is `mean`
            stages.append(Stage(stage, rng.lognormal(mu, LOGNORMAL_SIGMA, width), parents))
        queries.append(Query(arrival, name, tuple(stages)))
    return QueryWorkload(tuple(queries), slots, seconds)
