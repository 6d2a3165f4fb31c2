"""The high-load comparison: where Sparrow is weak (short jobs queued behind long tasks at high
load) and how each policy fares there, as response-time percentiles over omniscient's.

The workloads are those of the high-load table: 10,000 workers with 100-task jobs whose tasks share
one exponential duration (`per_job`: short and long jobs mixed) at loads 0.8, 0.9 and 0.95;
1,000 workers with 10-task jobs, bimodal durations (5% of tasks 20x longer) at 0.9 and 0.95;
10,000 workers, 100-task jobs, exponential durations at 0.9. 1 slot per worker, seed 1, the
first 10% of jobs left out. `sparrow simulate --paper` writes it as high_load.md/.csv.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ._config import SimConfig
from ._simulate import simulate

SEED = 1
COLUMNS = (
    "workload",
    "workers",
    "tasks_per_job",
    "load",
    "policy",
    "p50",
    "p99",
    "p50_vs_omniscient",
    "p99_vs_omniscient",
    "stolen",
)


@dataclass(frozen=True)
class HighLoadCase:
    """A workload (its SimConfig without policy and load) and the loads it is run at."""

    name: str
    config: SimConfig
    loads: tuple[float, ...]


CASES = (
    HighLoadCase(
        "per_job", SimConfig(n_workers=10_000, tasks_per_job=100, duration="per_job", n_jobs=5_000), (0.8, 0.9, 0.95)
    ),
    HighLoadCase(
        "bimodal",
        SimConfig(
            n_workers=1_000,
            tasks_per_job=10,
            duration="bimodal",
            bimodal_long_fraction=0.05,
            bimodal_ratio=20.0,
            n_jobs=20_000,
        ),
        (0.9, 0.95),
    ),
    HighLoadCase("exponential", SimConfig(n_workers=10_000, tasks_per_job=100, n_jobs=5_000), (0.9,)),
)


def run_high_load(
    policies: Sequence[str],
    *,
    n_jobs: int | None = None,
    warmup: float = 0.1,
    on_point: Callable[[str, float], None] | None = None,
) -> list[dict[str, float | str]]:
    """One row (keys COLUMNS) per (case, load, policy); omniscient is always simulated (the
    ratios' denominator) but only listed if asked for. `n_jobs` replaces each case's job count
    (a quick run). Error handling: a bad policy or n_jobs raises ValueError before any run."""
    points = [
        (case, replace(case.config, policy=p, load=load, seed=SEED, n_jobs=n_jobs or case.config.n_jobs))
        for case in CASES
        for load in case.loads
        for p in dict.fromkeys([*policies, "omniscient"])
    ]
    for _, config in points:
        config.validate()
    rows: list[dict[str, float | str]] = []
    for case, config in points:
        summary = simulate(config).summary(warmup=warmup)
        rows.append(
            {
                "workload": case.name,
                "workers": config.n_workers,
                "tasks_per_job": config.tasks_per_job,
                "load": config.load,
                "policy": config.policy,
                "p50": summary["p50"],
                "p99": summary["p99"],
                "stolen": summary["stolen"],
            }
        )
        if on_point is not None:
            on_point(config.policy, config.load)
    ideal = {(r["workload"], r["load"]): r for r in rows if r["policy"] == "omniscient"}
    for row in rows:
        base = ideal[(row["workload"], row["load"])]
        for q in ("p50", "p99"):
            row[f"{q}_vs_omniscient"] = float(row[q]) / float(base[q]) if float(base[q]) > 0 else float("nan")
    return [{k: row[k] for k in COLUMNS} for row in rows if row["policy"] in policies]


def markdown(rows: Sequence[dict[str, float | str]]) -> str:
    """The rows of the high-load table: per workload and load, each policy's p50 and p99 over omniscient's."""
    lines = [
        "| workload | load | policy | p50 (s) | p99 (s) | p50 / omniscient p50 | p99 / omniscient p99 |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        what = f"{r['workers']:,} workers, {r['tasks_per_job']}-task jobs, {r['workload']}"
        lines.append(
            f"| {what} | {r['load']} | {r['policy']} | {float(r['p50']):.4g} | {float(r['p99']):.4g} "
            f"| {float(r['p50_vs_omniscient']):.2f}x | {float(r['p99_vs_omniscient']):.2f}x |"
        )
    return "\n".join(lines) + "\n"
