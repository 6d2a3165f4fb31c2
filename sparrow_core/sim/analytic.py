"""The analytic anchors of docs/design.md: the probability that a job sees no queueing
when each worker is busy independently with probability `load`."""

from __future__ import annotations

from math import comb


def no_queueing_per_task(load: float, probe_ratio: int, n_tasks: int) -> float:
    """Per-task sampling with d probes per task: every task finds an idle worker."""
    return (1.0 - load**probe_ratio) ** n_tasks


def no_queueing_batch(load: float, probe_ratio: float, n_tasks: int) -> float:
    """Batch sampling of d*m probes: at least m of them land on idle workers."""
    k = round(probe_ratio * n_tasks)
    return sum(comb(k, i) * (1.0 - load) ** i * load ** (k - i) for i in range(n_tasks, k + 1))


def mm1_response(load: float, mean_duration: float) -> float:
    """Mean response time (wait + service) of an M/M/1 queue."""
    return mean_duration / (1.0 - load)
