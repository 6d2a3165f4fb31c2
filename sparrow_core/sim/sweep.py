"""A sweep: one simulation per (policy, load) on the same workload seed, as table rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from . import _views
from ._config import SimConfig
from ._simulate import simulate

COLUMNS = (
    "policy",
    "load",
    "mean",
    "p50",
    "p95",
    "p99",
    "vs_omniscient",
    "response_over_ideal",
    "no_queueing",
    "mean_task_wait",
    "probes",
    "get_task_empty",
    "cancelled",
    "tasks_per_second",
)
"""The columns of a sweep's rows, in order (the keys of SimResult.summary, less the counters)."""


@dataclass
class Sweep:
    """rows: one dict per point (keys COLUMNS); responses[(policy, load)]: the job response
    times after the warm-up, kept for CDF plots."""

    rows: list[dict[str, float | str]]
    responses: dict[tuple[str, float], npt.NDArray[np.float64]]

    def __repr__(self) -> str:
        return _views.sweep_repr(self)

    def _repr_html_(self) -> str:
        return _views.sweep_html(self)


def run_sweep(
    base: SimConfig,
    policies: Sequence[str],
    loads: Sequence[float],
    *,
    warmup: float = 0.1,
    on_point: Callable[[str, float], None] | None = None,
) -> Sweep:
    """Simulates every (policy, load) of the grid with `base`'s other fields.

    `vs_omniscient` is the mean response over omniscient's at the same load (nan when
    omniscient is not in the sweep). `on_point(policy, load)` is called after each point.
    Error handling: an invalid point raises ValueError before anything is simulated.
    """
    points = [replace(base, policy=p, load=load) for load in loads for p in policies]
    for config in points:
        config.validate()
    rows: list[dict[str, float | str]] = []
    responses: dict[tuple[str, float], npt.NDArray[np.float64]] = {}
    for config in points:
        result = simulate(config)
        summary = result.summary(warmup=warmup)
        row: dict[str, float | str] = {"policy": config.policy, "load": config.load}
        row.update({k: summary[k] for k in COLUMNS if k in summary})
        rows.append(row)
        responses[(config.policy, config.load)] = result.job_response[int(len(result.job_response) * warmup) :]
        if on_point is not None:
            on_point(config.policy, config.load)
    ideal = {row["load"]: row["mean"] for row in rows if row["policy"] == "omniscient"}
    for row in rows:
        row["vs_omniscient"] = float(row["mean"]) / float(ideal[row["load"]]) if row["load"] in ideal else float("nan")
    return Sweep([{k: row[k] for k in COLUMNS} for row in rows], responses)
