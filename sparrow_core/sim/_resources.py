"""simulate_resources(config): heterogeneous hosts and tasks that ask for resources, placed by Sparrow
(probes where the request fits, late binding, the fit launcher) or by the omniscient packer, on the
same arrivals (csrc/sparrow/sim/resource/). RESOURCE_WORKLOADS holds the two measured workloads."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core, check_probe_ratio
from ._config import _choice, _int, _number
from ._result import after_warmup

RESOURCE_PLACEMENTS: tuple[str, ...] = _core.RESOURCE_PLACEMENTS
"""The resource simulator's placements: "sparrow" (probes where the request fits, late binding, the fit
launcher) and "packer" (omniscient: a central queue placing each task as soon as some host holds it)."""
GIB = 1024**3

RESOURCE_WORKLOADS: dict[str, dict[str, Any]] = {
    # 10% of the tasks need a GPU, which 10% of the hosts have.
    "gpu": dict(
        kinds=("slots", "cpus", "memory", "gpu"),
        hosts=((0.9, (8, 8000, 32 * GIB, 0)), (0.1, (16, 16000, 64 * GIB, 4))),
        requests=((0.9, (1, 1000, 2 * GIB, 0)), (0.1, (1, 1000, 4 * GIB, 1))),
    ),
    # One kind of host; tasks of mixed CPU and memory sizes.
    "mixed": dict(
        kinds=("slots", "cpus", "memory"),
        hosts=((1.0, (16, 16000, 64 * GIB)),),
        requests=(
            (0.70, (1, 1000, 2 * GIB)),
            (0.20, (1, 4000, 8 * GIB)),
            (0.07, (1, 8000, 16 * GIB)),
            (0.03, (1, 2000, 48 * GIB)),
        ),
    ),
}
"""The measured workloads, by name: the fields kinds, hosts and requests of a ResourceSimConfig (its
`of(name)`). Classes are (share, amount per kind); the kinds are slots, milli-CPUs, bytes of memory
and whole GPUs. "gpu": 10% of the tasks need a GPU, which 10% of the hosts have; "mixed": one kind of
host, tasks of mixed CPU and memory sizes."""

Classes = tuple[tuple[float, tuple[int, ...]], ...]
Units = npt.NDArray[np.int64]
Shares = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ResourceSimConfig:
    """One resource simulation. Times are in seconds.

    `n_workers` hosts, each of a class of `hosts` ((share, capacity per kind), ...) drawn with the
    shares; `kinds` names the resource kinds, the first being "slots". Jobs of `tasks_per_job` tasks,
    each job of one class of `requests` ((share, request per kind), ...; one slot each), arrive as a
    Poisson process at the rate that loads the busiest kind to `load` on average (the tasks' mean
    demand of it over the hosts' mean capacity); durations are exponential with `mean_duration`.
    `policy`: "sparrow" (probe_ratio x tasks probes among the hosts whose capacity holds the request,
    late binding, a host launching by the fit launcher with `fit_window` and `fit_max_skips`, every
    message taking `network_delay`) or "packer" (omniscient, no delays). The same seed gives both
    policies the same hosts, arrivals, classes and durations.
    """

    policy: str = "sparrow"
    n_workers: int = 1000
    kinds: tuple[str, ...] = RESOURCE_WORKLOADS["gpu"]["kinds"]
    hosts: Classes = RESOURCE_WORKLOADS["gpu"]["hosts"]
    requests: Classes = RESOURCE_WORKLOADS["gpu"]["requests"]
    tasks_per_job: int = 10
    load: float = 0.8
    n_jobs: int = 1000
    mean_duration: float = 0.1
    probe_ratio: float = 2.0
    network_delay: float = 0.0005
    fit_window: int = 8
    fit_max_skips: int = 8
    seed: int = 0

    @classmethod
    def of(cls, workload: str, **fields: Any) -> ResourceSimConfig:
        """The config of a named workload of RESOURCE_WORKLOADS ("gpu", "mixed"), with `fields` set."""
        _choice("workload", workload, tuple(RESOURCE_WORKLOADS))
        return cls(**RESOURCE_WORKLOADS[workload], **fields)

    def _matrix(self, name: str, classes: Classes) -> tuple[Units, Shares]:
        if not classes:
            raise ValueError(f"{name} must name at least one class")
        rows, shares = [], []
        for i, entry in enumerate(classes):
            share, amounts = entry
            shares.append(_number(f"{name}[{i}] share", share, low=0.0, high=1.0))
            if len(amounts) != len(self.kinds):
                raise ValueError(f"{name}[{i}] must have one amount per kind ({len(self.kinds)}), got {len(amounts)}")
            rows.append([_int(f"{name}[{i}] amount", a, 0, 2**53) for a in amounts])
        if not math.isclose(sum(shares), 1.0, abs_tol=1e-9):
            raise ValueError(f"{name} shares must sum to 1, got {sum(shares)}")
        return np.array(rows, dtype=np.int64), np.array(shares, dtype=np.float64)

    def arrays(self) -> tuple[Units, Shares, Units, Shares]:
        """host_capacity, host_share, request, request_share, checked (ValueError naming the field)."""
        if not self.kinds or self.kinds[0] != "slots" or len(set(self.kinds)) != len(self.kinds):
            raise ValueError(f"kinds must be distinct names, the first 'slots', got {self.kinds}")
        _int("len(kinds)", len(self.kinds), 1, int(_core.MAX_RESOURCES))
        hosts, host_share = self._matrix("hosts", self.hosts)
        requests, request_share = self._matrix("requests", self.requests)
        if np.any(requests[:, 0] != 1):
            raise ValueError("every request takes one slot: its first amount must be 1")
        return hosts, host_share, requests, request_share

    def arrival_rate(self) -> float:
        """Jobs per second that load the busiest kind to `load`."""
        hosts, host_share, requests, request_share = self.arrays()
        capacity = self.n_workers * (host_share @ hosts.astype(np.float64))
        demand = self.tasks_per_job * self.mean_duration * (request_share @ requests.astype(np.float64))
        used = demand > 0
        return float(self.load * np.min(capacity[used] / demand[used]))

    def params(self) -> dict[str, Any]:
        """The scalar fields the binding takes, validated."""
        _choice("policy", self.policy, RESOURCE_PLACEMENTS)
        _number("load", self.load, low=0.0, high=1.0, low_open=True)
        return dict(
            policy=self.policy,
            n_workers=_int("n_workers", self.n_workers, 1, 10_000_000),
            n_jobs=_int("n_jobs", self.n_jobs, 0, 100_000_000),
            tasks_per_job=_int("tasks_per_job", self.tasks_per_job, 1, 1_000_000),
            mean_duration=_number("mean_duration", self.mean_duration, low=0.0, high=1e9, low_open=True),
            probe_ratio=check_probe_ratio(self.probe_ratio),
            network_delay=_number("network_delay", self.network_delay, low=0.0, high=1e6),
            fit_window=_int("fit_window", self.fit_window, 1, 1_000_000),
            fit_max_skips=_int("fit_max_skips", self.fit_max_skips, 0, 10**12),
            seed=_int("seed", self.seed, 0, 2**64 - 1),
            arrival_rate=self.arrival_rate(),
        )


@dataclass(frozen=True)
class ResourceSimResult:
    """Per job, in arrival order: arrival, response (end of its last task minus arrival), wait (the
    latest start of its tasks minus arrival) and request class; per host its class; per kind the
    units x seconds of running tasks (`work`) and held (`held`: running, or asking for a task).
    `counters`: probes, get_task, get_task_empty, cancelled, skips (launches that passed a head),
    owed (decisions held back for a head), events."""

    config: ResourceSimConfig
    job_arrival: npt.NDArray[np.float64]
    job_response: npt.NDArray[np.float64]
    job_wait: npt.NDArray[np.float64]
    job_class: npt.NDArray[np.int32]
    host_class: npt.NDArray[np.int32]
    work: npt.NDArray[np.float64]
    held: npt.NDArray[np.float64]
    counters: dict[str, int] = field(default_factory=dict)
    end_time: float = 0.0
    wall_time: float = 0.0

    def capacity(self) -> npt.NDArray[np.float64]:
        """The cluster's units of each kind."""
        hosts = np.array([amounts for _, amounts in self.config.hosts], dtype=np.float64)
        return hosts[self.host_class].sum(axis=0)

    def largest_class(self) -> int:
        """The request class that asks for the most: its amounts over the largest host's, summed."""
        requests = np.array([amounts for _, amounts in self.config.requests], dtype=np.float64)
        largest = np.array([amounts for _, amounts in self.config.hosts], dtype=np.float64).max(axis=0)
        return int(np.argmax((requests[:, 1:] / np.maximum(largest[1:], 1)).sum(axis=1)))

    def summary(self, warmup: float = 0.1) -> dict[str, float]:
        """Utilisation of each kind over the run (`util_<kind>`: work over capacity x end time), response
        p50 and p99 of the jobs after the first `warmup` fraction, and the wait p50 and p99 of the
        largest request class's jobs (`largest_wait_p50`, `largest_wait_p99`), and the counters."""
        first = after_warmup(len(self.job_response), warmup)
        response = self.job_response[first:]
        out: dict[str, float] = {"jobs": float(response.size)}
        span = self.end_time if self.end_time > 0 else float("nan")
        for kind, work, capacity in zip(self.config.kinds, self.work, self.capacity()):
            if capacity > 0:
                out[f"util_{kind}"] = float(work / (capacity * span))
        out["p50"], out["p99"] = (float(x) for x in np.percentile(response, [50, 99]))
        largest = self.job_wait[first:][self.job_class[first:] == self.largest_class()]
        if largest.size:
            out["largest_wait_p50"], out["largest_wait_p99"] = (float(x) for x in np.percentile(largest, [50, 99]))
        out.update({name: float(value) for name, value in self.counters.items()})
        return out


def simulate_resources(config: ResourceSimConfig | None = None) -> ResourceSimResult:
    """Runs one resource simulation (the GIL released); the same config gives the same result.

    Error handling: an invalid configuration raises ValueError (TypeError for a wrong type) naming
    the field; a request class that no host can hold raises ValueError naming the class.
    """
    config = ResourceSimConfig() if config is None else config
    if not isinstance(config, ResourceSimConfig):
        raise TypeError(f"config must be a ResourceSimConfig, got {type(config).__name__}")
    params = config.params()
    started = time.perf_counter()
    raw = _core._simulate_resources(params, *config.arrays())
    wall = time.perf_counter() - started
    return ResourceSimResult(
        config=config,
        job_arrival=raw["job_arrival"],
        job_response=raw["job_response"],
        job_wait=raw["job_wait"],
        job_class=raw["job_class"],
        host_class=raw["host_class"],
        work=raw["work"],
        held=raw["held"],
        counters=dict(raw["counters"]),
        end_time=float(raw["end_time"]),
        wall_time=wall,
    )
