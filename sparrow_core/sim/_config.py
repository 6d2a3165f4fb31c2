"""SimConfig: what to simulate, with every field defaulted, and its validation.

`SimConfig.validate()` raises ValueError naming the field and what is wrong (TypeError for a
wrong type); `simulate` calls it first, so a bad configuration never reaches the C++ core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike
from typing import Any

from .. import PIPELINE_MAX_DEPTH, QUEUE_POLICIES, check_probe_ratio
from .._core import DURATIONS, PLACEMENT_POLICIES

STEAL_POLICIES = ("sparrow_steal", "sparrow_steal_pipelined")  # the policies that steal (steal_script replays it)


@dataclass(frozen=True)
class SimConfig:
    """One simulation. Times are in seconds.

    The cluster is `n_workers` workers of `slots` slots each. Jobs of `tasks_per_job` tasks
    arrive as a Poisson process whose rate gives the target `load` (arrival rate x tasks per
    job x mean duration / (n_workers x slots)), or replay `trace` (a file of lines
    `arrival_time n_tasks duration... [field=value...]`, see read_trace; `load`, `n_jobs`,
    `tasks_per_job` and the duration fields are then unused). Jobs are spread round-robin over
    `n_schedulers` schedulers.

    Delays: every scheduler-worker message takes `network_delay`. To replay a runtime:
    each task holds its slot `launch_overhead` before its duration starts (the executor
    handoff); a job reaches its scheduler `submit_delay` after it arrives (the client's
    submission) and a task's outcome reaches the client `result_delay` after it ends (a job's
    response ends there; a trace job waiting for others is released that much after they
    finish, plus its own submit_delay). All policies pay these three; omniscient sends no
    messages, so no network_delay.

    Policies: random | per_task (ceil(probe_ratio) probes per task, least loaded wins) |
    batch (ceil(probe_ratio x m) probes, the m least loaded) | sparrow (batch sampling + late
    binding, `cancellation` of leftover reservations) | sparrow_steal (sparrow plus Hawk-style work
    stealing: a worker left with a free slot and an empty queue asks `steal_victims` random peers
    and takes up to `steal_max_take` reservations from the one queued behind the longest-running
    task, if that task has run at least `steal_min_blocked`; its probes leave `steal_wait` after
    the worker became idle, if it still is: a runtime's reaction time) | sparrow_pipelined and
    sparrow_steal_pipelined (sparrow and sparrow_steal with pipelined late binding: a busy worker whose
    queue holds reservations asks for the next task of a slot, at most one per running task, once
    that task has run `pipeline_after` x the median run time of the worker's last 8 tasks; 0: at
    once; `pipeline_depth` d > 1, the runtime's rule: while that median is under 5 ms, up to d per
    slot held and at most half of what the worker holds of a job; `pipeline_gate`: it asks ahead at all,
    even one deep, only while each of the last 8 ran under 5 ms; with `pipeline_jit` also, one deep, while
    they are steady (the longest at most 1.5x the shortest), a task then asking just before its predicted end:
    the shortest less the round trip and 0.25 ms; with `pipeline_steady` (and not `pipeline_jit`) the same opening
    while they are within 3x, a task then asking at its start) | omniscient (ideal central queue).
    Durations: exponential | constant | bimodal (a `bimodal_long_fraction` of tasks last
    `bimodal_ratio` times the others, mean kept) | per_job (one exponential draw per job).
    Workers serve their queues by `queue_policy`: fifo | priority (jobs get priority p with
    probability priority_shares[p], lower first) | fair (job user u with probability
    user_demands[u], served in proportion to user_weights[u]).
    Constraints: a `constrained_jobs` fraction of jobs may run only on a random
    `constraint_workers` fraction of the workers; in the other jobs each task is constrained
    with probability `constrained_tasks` to `task_candidates` random workers.
    Replaying a run's work stealing: `steal_script`, a file of the run's own attempts
    (read_steal_script), makes each attempt of a stealing policy probe the victims of its thief's
    first unused scripted attempt within `steal_script_tolerance` seconds of it (else it draws them).
    `keep_task_waits=False` drops the per-task array (memory: 8 bytes per task).
    """

    policy: str = "sparrow"
    n_workers: int = 1000
    slots: int = 1
    tasks_per_job: int = 100
    load: float = 0.8
    n_jobs: int = 1000
    duration: str = "exponential"
    mean_duration: float = 0.1
    network_delay: float = 0.0005
    launch_overhead: float = 0.0
    submit_delay: float = 0.0
    result_delay: float = 0.0
    probe_ratio: float = 2.0
    n_schedulers: int = 1
    cancellation: bool = True
    seed: int = 0
    steal_victims: int = 8
    steal_max_take: int = 1
    steal_min_blocked: float = 0.0
    steal_wait: float = 0.0
    steal_script: str | PathLike[str] | None = None
    steal_script_tolerance: float = 0.01
    pipeline_after: float = 0.0
    pipeline_depth: int = 1
    pipeline_gate: bool = False
    pipeline_jit: bool = False
    pipeline_steady: bool = False
    queue_policy: str = "fifo"
    user_weights: tuple[float, ...] = (1.0,)
    user_demands: tuple[float, ...] | None = None
    priority_shares: tuple[float, ...] = (1.0,)
    constrained_jobs: float = 0.0
    constraint_workers: float = 0.1
    constrained_tasks: float = 0.0
    task_candidates: int = 3
    bimodal_long_fraction: float = 0.1
    bimodal_ratio: float = 10.0
    trace: str | PathLike[str] | None = None
    keep_task_waits: bool = True

    def validate(self) -> None:
        """Raises ValueError (or TypeError) naming the first field that is wrong."""
        _choice("policy", self.policy, PLACEMENT_POLICIES)
        _choice("duration", self.duration, DURATIONS)
        _choice("queue_policy", self.queue_policy, QUEUE_POLICIES)
        _int("n_workers", self.n_workers, 1, 2**31 - 1, "a simulation needs at least one worker")
        _int("slots", self.slots, 1, 2**31 - 1)
        _int("tasks_per_job", self.tasks_per_job, 1, 2**31 - 1)
        _int("n_jobs", self.n_jobs, 0, 2**62)
        _int("n_schedulers", self.n_schedulers, 1, 2**31 - 1)
        _int("task_candidates", self.task_candidates, 1, 2**31 - 1)
        _int("seed", self.seed, 0, 2**64 - 1)
        _int("steal_victims", self.steal_victims, 1, 2**31 - 1)
        _int("steal_max_take", self.steal_max_take, 1, 2**31 - 1)
        _number("steal_min_blocked", self.steal_min_blocked, low=0.0)
        _number("steal_wait", self.steal_wait, low=0.0)
        _number("steal_script_tolerance", self.steal_script_tolerance, low=0.0)
        if self.steal_script is not None and self.policy not in STEAL_POLICIES:
            raise ValueError(
                f"steal_script replays work stealing, which policy {self.policy!r} does not do: use one of "
                + ", ".join(STEAL_POLICIES)
            )
        _number("pipeline_after", self.pipeline_after, low=0.0)
        _int("pipeline_depth", self.pipeline_depth, 1, PIPELINE_MAX_DEPTH)
        for name in ("cancellation", "keep_task_waits", "pipeline_gate", "pipeline_jit", "pipeline_steady"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        if self.trace is None:
            load = _number("load", self.load)
            if not 0.0 < load < 1.0:
                raise ValueError(f"load must be in (0, 1) for an open system (jobs arrive at random), got {load}")
        _number("mean_duration", self.mean_duration, low=0.0, low_open=True)
        for name in ("network_delay", "launch_overhead", "submit_delay", "result_delay"):
            _number(name, getattr(self, name), low=0.0)
        check_probe_ratio(self.probe_ratio)
        _number("bimodal_ratio", self.bimodal_ratio, low=1.0)
        for name in ("constrained_jobs", "constrained_tasks", "bimodal_long_fraction"):
            _number(name, getattr(self, name), low=0.0, high=1.0)
        _number("constraint_workers", self.constraint_workers, low=0.0, high=1.0, low_open=True)
        weights = _shares("user_weights", self.user_weights, positive=True)
        if self.user_demands is not None:
            demands = _shares("user_demands", self.user_demands)
            if len(demands) != len(weights):
                raise ValueError(
                    f"user_demands must have one entry per user ({len(weights)} in user_weights), got {len(demands)}"
                )
        _shares("priority_shares", self.priority_shares)

    def params(self) -> dict[str, Any]:
        """The plain values the compiled core takes (call validate() first)."""
        n_users = len(self.user_weights)
        demands = self.user_demands if self.user_demands is not None else (1.0,) * n_users
        if self.trace is None:
            rate = self.load * self.n_workers * self.slots / (self.tasks_per_job * self.mean_duration)
        else:
            rate = 1.0
        return {
            "policy": self.policy,
            "n_workers": self.n_workers,
            "slots": self.slots,
            "queue_policy": self.queue_policy,
            "network_delay": float(self.network_delay),
            "launch_overhead": float(self.launch_overhead),
            "submit_delay": float(self.submit_delay),
            "result_delay": float(self.result_delay),
            "probe_ratio": float(self.probe_ratio),
            "n_schedulers": self.n_schedulers,
            "cancellation": self.cancellation,
            "seed": self.seed,
            "steal_victims": self.steal_victims,
            "steal_max_take": self.steal_max_take,
            "steal_min_blocked": float(self.steal_min_blocked),
            "steal_wait": float(self.steal_wait),
            "steal_script_tolerance": float(self.steal_script_tolerance),
            "pipeline_after": float(self.pipeline_after),
            "pipeline_depth": self.pipeline_depth,
            "pipeline_gate": self.pipeline_gate,
            "pipeline_jit": self.pipeline_jit,
            "pipeline_steady": self.pipeline_steady,
            "n_jobs": self.n_jobs,
            "tasks_per_job": self.tasks_per_job,
            "arrival_rate": rate,
            "duration": self.duration,
            "mean_duration": float(self.mean_duration),
            "bimodal_long_fraction": float(self.bimodal_long_fraction),
            "bimodal_ratio": float(self.bimodal_ratio),
            "user_weight": [float(w) for w in self.user_weights],
            "user_demand": [float(d) for d in demands],
            "priority_share": [float(s) for s in self.priority_shares],
            "constrained_jobs": float(self.constrained_jobs),
            "constraint_workers": float(self.constraint_workers),
            "constrained_tasks": float(self.constrained_tasks),
            "task_candidates": self.task_candidates,
            "keep_task_waits": self.keep_task_waits,
        }


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}: expected one of {', '.join(allowed)}")


def _int(name: str, value: object, low: int, high: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        bound = f">= {low}" if high >= 2**31 - 1 else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}" + (f" ({why})" if why else ""))
    return value


def _number(
    name: str, value: object, *, low: float | None = None, high: float | None = None, low_open: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name} must be <= {high}, got {x}")
    return x


def _shares(name: str, values: object, *, positive: bool = False) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    out = tuple(_number(f"{name}[{i}]", v, low=0.0, low_open=positive) for i, v in enumerate(values))
    if not out:
        raise ValueError(f"{name} must not be empty")
    if sum(out) <= 0:
        raise ValueError(f"{name} must not all be 0")
    return out
