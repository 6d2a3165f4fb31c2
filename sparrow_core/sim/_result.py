"""SimResult: the per-job and per-task measurements of one simulation, and their summary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from . import _views
from ._config import SimConfig

FloatArray = npt.NDArray[np.float64]


def after_warmup(n_jobs: int, warmup: float) -> int:
    """The index of the first job a summary counts: the first `warmup` fraction is left out (the
    cluster starts empty, so the first jobs see less queueing than in steady state)."""
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"warmup must be in [0, 1), got {warmup}")
    first = int(n_jobs * warmup)
    if first >= n_jobs:
        raise ValueError("summary: no job left after the warm-up (n_jobs is 0)")
    return first


@dataclass(frozen=True)
class SimResult:
    """Per job, in arrival order: arrival time, response time (end of its last task minus
    arrival), ideal (its longest task), its longest task queue wait, user and priority.
    Per task (job order, then task index; empty when config.keep_task_waits is False): the
    queue wait. `counters`: probes, get_task, get_task_empty, cancel_messages, cancelled
    (reservations removed), messages, events, max_jobs_in_flight; work stealing's steal_attempts,
    steals, stolen; pipelining's asked_ahead (GetTasks sent for a busy slot) and bound_ahead (those
    answered with a task that then waited for its slot). `wall_time`: seconds the
    simulation took."""

    config: SimConfig
    job_arrival: FloatArray
    job_response: FloatArray
    job_ideal: FloatArray
    job_wait: FloatArray
    job_user: npt.NDArray[np.int32]
    job_priority: npt.NDArray[np.int32]
    task_wait: FloatArray
    counters: dict[str, int] = field(default_factory=dict)
    end_time: float = 0.0
    wall_time: float = 0.0

    def __repr__(self) -> str:
        return _views.sim_result_repr(self)

    def _repr_html_(self) -> str:
        return _views.sim_result_html(self)

    @property
    def n_tasks(self) -> int:
        """Tasks simulated."""
        return int(self.counters.get("tasks", 0))

    def summary(self, warmup: float = 0.1) -> dict[str, float]:
        """Response-time statistics over the jobs after the first `warmup` fraction (the
        cluster starts empty, so the first jobs see less queueing than in steady state).

        Keys: jobs, mean, p50, p95, p99 (response time, seconds), mean_ideal,
        response_over_ideal (mean response / mean ideal), no_queueing (fraction of jobs none
        of whose tasks waited in a queue), mean_task_wait (nan when task waits were not
        kept), the counters, and tasks_per_second (simulated tasks per wall-clock second).
        """
        first = after_warmup(len(self.job_response), warmup)
        response = self.job_response[first:]
        ideal = self.job_ideal[first:]
        p50, p95, p99 = np.percentile(response, [50, 95, 99])
        out: dict[str, float] = {
            "jobs": float(response.size),
            "mean": float(response.mean()),
            "p50": float(p50),
            "p95": float(p95),
            "p99": float(p99),
            "mean_ideal": float(ideal.mean()),
            "response_over_ideal": float(response.mean() / ideal.mean()) if ideal.mean() > 0 else float("nan"),
            "no_queueing": float(np.mean(self.job_wait[first:] == 0.0)),
            "mean_task_wait": float(self.task_wait.mean()) if self.task_wait.size else float("nan"),
        }
        out.update({name: float(value) for name, value in self.counters.items()})
        out["tasks_per_second"] = self.n_tasks / self.wall_time if self.wall_time > 0 else float("nan")
        return out
