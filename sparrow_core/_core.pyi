# Type stubs for the compiled extension sparrow_core._core (see _core.pyx).
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict

import numpy as np
import numpy.typing as npt

Int64Array = npt.NDArray[np.int64]
ArrayLikeInt = npt.ArrayLike
QueuePolicy = Literal["fifo", "priority", "fair"]

QUEUE_POLICIES: tuple[QueuePolicy, ...]
"""The reservation queue policies: "fifo", "priority" (lower number first) and "fair" (weighted users)."""
PRIORITY_RANGE: range
"""The priorities a reservation may have (a C++ int32: lower runs first)."""
PLACEMENT_POLICIES: tuple[str, ...]
"""The simulator's placement policies: random, per-task, batch, batch + late binding (sparrow), omniscient."""
DURATIONS: tuple[str, ...]
"""The simulator's task duration distributions: exponential, constant, bimodal, per_job (one exponential
draw per job)."""

class Rng:
    """xoshiro256** seeded through splitmix64; the same seed gives the same stream everywhere."""

    def __init__(self, seed: int) -> None: ...
    def next_u64(self) -> int: ...
    def below(self, n: int) -> int: ...
    def uniform(self) -> float: ...
    def exponential(self, mean: float) -> float: ...
    def spawn(self) -> Rng: ...

def probe_count(n_tasks: int, probe_ratio: float) -> int: ...
def check_probe_ratio(value: float, name: str = "probe_ratio") -> float: ...
def sample_batch(
    rng: Rng,
    n_workers: int,
    n_tasks: int,
    probe_ratio: float,
    candidates: ArrayLikeInt | None = None,
) -> Int64Array: ...
def sample_batch_many(
    rng: Rng,
    n_workers: int,
    n_tasks: ArrayLikeInt,
    probe_ratio: float,
    candidates: ArrayLikeInt | None = None,
) -> tuple[Int64Array, Int64Array]: ...
def sample_per_task(rng: Rng, n_workers: int, n_tasks: int, d: int) -> Int64Array: ...
def sample_constrained(
    rng: Rng,
    n_workers: int,
    task_candidates: Sequence[ArrayLikeInt | None],
    probe_ratio: float,
) -> tuple[Int64Array, Int64Array]: ...
def sample_constrained_flat(
    rng: Rng,
    n_workers: int,
    candidates: ArrayLikeInt,
    offsets: ArrayLikeInt,
    probe_ratio: float,
) -> tuple[Int64Array, Int64Array]: ...

class InfeasibleTaskError(ValueError):
    task: int
    def __init__(self, task: int) -> None: ...

def sample_job(
    rng: Rng,
    n_workers: int,
    n_tasks: int,
    probe_ratio: float,
    candidates: ArrayLikeInt | None = None,
    task_candidates: Sequence[ArrayLikeInt | None] | ArrayLikeInt | None = None,
    task_offsets: ArrayLikeInt | None = None,
    tasks: ArrayLikeInt | None = None,
    prefer: Sequence[ArrayLikeInt | None] | ArrayLikeInt | None = None,
    prefer_offsets: ArrayLikeInt | None = None,
    per_task: bool = False,
) -> tuple[Int64Array, Int64Array]: ...

class Reservation:
    job_id: int
    user: Hashable
    priority: int
    def __init__(self, job_id: int, user: Hashable, priority: int = 0) -> None: ...

class ReservationQueue:
    policy: QueuePolicy
    def __init__(
        self,
        policy: QueuePolicy = "fifo",
        weights: dict[Any, float] | None = None,  # user (any hashable) -> weight
        default_weight: float = 1.0,
    ) -> None: ...
    def push(self, job_id: int, user: Hashable, priority: int = 0, count: int = 1) -> None: ...
    def pop(self) -> Reservation | None: ...
    def peek(self) -> Reservation | None: ...
    def refund(self, user: Hashable) -> None: ...
    def cancel(self, job_id: int) -> int: ...
    def count(self, user: Hashable) -> int: ...
    def counts(self) -> dict[Hashable, int]: ...
    def set_weight(self, user: Hashable, weight: float) -> None: ...
    def push_many(self, job_ids: ArrayLikeInt, users: ArrayLikeInt, priorities: ArrayLikeInt | None = None) -> None: ...
    def pop_many(self, max_count: int) -> tuple[Int64Array, npt.NDArray[np.generic], Int64Array]: ...
    def steal(self, max_count: int, pinned: Iterable[int] = ()) -> list[Reservation]: ...
    def __len__(self) -> int: ...
    def __bool__(self) -> bool: ...

def choose_victims(rng: Rng, n_workers: int, thief: int, k: int) -> Int64Array: ...
def choose_steal(
    rng: Rng,
    stealable: ArrayLikeInt,
    blocked_for: npt.ArrayLike,
    max_take: int = 1,
    min_blocked: float = 0.0,
) -> tuple[int, int] | None: ...

PipelineMode = Literal["off", "gated", "steady", "jit", "always"]
PIPELINE_MODES: tuple[PipelineMode, ...]
"""The pipelining modes: "off", "gated", "steady", "jit" and "always" (csrc/sparrow/pipeline.h)."""
PIPELINE_RECENT: int
"""Run times a node keeps for its pipelining rule (8)."""
PIPELINE_SHORT_TASK: float
"""Seconds: a run time under it is short (the gate opens, and a deeper pipeline goes deep, on short tasks)."""
PIPELINE_MAX_DEPTH: int
"""The deepest pipeline: requests ahead or bound per slot held (64)."""
PIPELINE_STEADY_SPREAD: float
"""Steady mode: run times are steady while the longest is at most this times the shortest (3)."""
PIPELINE_JIT_SPREAD: float
"""Jit mode: run times are steady while the longest is at most this times the shortest (1.5)."""
PIPELINE_JIT_MARGIN: float
"""Jit mode: seconds a request is asked ahead before the round trip before the predicted end (0.25 ms)."""

class PipelineRule:
    mode: PipelineMode
    keeps_recent: bool
    def __init__(self, mode: str, depth: int) -> None: ...
    @property
    def depth(self) -> int: ...
    def record(self, run_time: float, round_trip: float = 0.0) -> None: ...
    def forget(self) -> None: ...
    @property
    def recent(self) -> list[float]: ...
    @property
    def longest(self) -> float: ...
    @property
    def short_recent(self) -> bool: ...
    @property
    def deep(self) -> bool: ...
    @property
    def steady(self) -> bool: ...
    @property
    def ask_after(self) -> float: ...
    @property
    def ask_until(self) -> float: ...
    def gate_open(self, overrunning: bool) -> bool: ...
    def ahead_limit(self, held_slots: int, may_ask: int) -> int: ...
    def half_rule_applies(self) -> bool: ...
    @staticmethod
    def half_allows(ahead_of_job: int, queued_of_job: int) -> bool: ...

MAX_RESOURCES: int
"""Resource kinds one cluster may name (the length of every resource vector at most)."""

def feasible_workers(capacities: npt.ArrayLike, request: ArrayLikeInt) -> Int64Array: ...
def choose_launch(
    free: ArrayLikeInt,
    requests: npt.ArrayLike,
    head_skips: int = 0,
    window: int = 8,
    max_skips: int = 8,
) -> int | None: ...

class TaskTable:
    def __init__(self) -> None: ...
    def add_job(
        self,
        job_id: int,
        n_tasks: int,
        candidates: Sequence[Iterable[int] | None] | None = None,
        preferred: Sequence[Iterable[int] | None] | None = None,
        per_task: bool = False,
    ) -> None: ...
    def reserve(self, job_id: int, workers: ArrayLikeInt, tasks: ArrayLikeInt | None = None) -> None: ...
    def get_task(self, job_id: int, worker: int) -> int | None: ...
    def get_task_many(self, job_ids: ArrayLikeInt, workers: ArrayLikeInt) -> Int64Array: ...
    def all_launched(self, job_id: int) -> bool: ...
    def workers_to_cancel(self, job_id: int) -> Int64Array: ...
    def remove_job(self, job_id: int) -> None: ...
    def n_tasks(self, job_id: int) -> int: ...
    def n_launched(self, job_id: int) -> int: ...
    def outstanding(self, job_id: int) -> int: ...
    def unlaunched(self, job_id: int) -> Int64Array: ...
    def drop_worker(self, job_id: int, worker: int) -> int: ...
    def unlaunch(self, job_id: int, task: int) -> None: ...
    def launch_all(self, job_id: int) -> None: ...
    def __contains__(self, job_id: object) -> bool: ...
    def __len__(self) -> int: ...

# The simulator's entry point (private: the typed public face is sparrow_core.sim).
class _SimOutput(TypedDict):  # the dict _simulate returns (a stub-only type)
    job_arrival: npt.NDArray[np.float64]
    job_response: npt.NDArray[np.float64]
    job_ideal: npt.NDArray[np.float64]
    job_wait: npt.NDArray[np.float64]
    job_user: npt.NDArray[np.int32]
    job_priority: npt.NDArray[np.int32]
    task_wait: npt.NDArray[np.float64]
    counters: dict[str, int]
    end_time: float

def _simulate(
    params: dict[str, object],
    trace: Mapping[str, npt.ArrayLike] | None = None,
    steals: Mapping[str, npt.ArrayLike] | None = None,
) -> _SimOutput: ...

# The resource simulator's entry point (private: the typed public face is sparrow_core.sim.simulate_resources).
RESOURCE_PLACEMENTS: tuple[str, ...]
"""The resource simulator's placements: sparrow (probes where the request fits + the fit launcher), packer."""

class _ResourceSimOutput(TypedDict):  # the dict _simulate_resources returns (a stub-only type)
    job_arrival: npt.NDArray[np.float64]
    job_response: npt.NDArray[np.float64]
    job_wait: npt.NDArray[np.float64]
    job_class: npt.NDArray[np.int32]
    host_class: npt.NDArray[np.int32]
    work: npt.NDArray[np.float64]
    held: npt.NDArray[np.float64]
    counters: dict[str, int]
    end_time: float

def _simulate_resources(
    params: dict[str, object],
    host_capacity: npt.ArrayLike,
    host_share: npt.ArrayLike,
    request: npt.ArrayLike,
    request_share: npt.ArrayLike,
) -> _ResourceSimOutput: ...
