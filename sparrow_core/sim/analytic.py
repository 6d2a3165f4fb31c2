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


def mg1_response(arrival_rate: float, mean_service: float, second_moment: float) -> float:
    """Mean response time of an M/G/1 queue (Pollaczek-Khinchine): E[S] + rate E[S^2] / (2 (1 - rate E[S]))."""
    load = arrival_rate * mean_service
    if not 0.0 <= load < 1.0:
        raise ValueError(f"the queue is unstable at load {load}")
    return mean_service + arrival_rate * second_moment / (2.0 * (1.0 - load))
