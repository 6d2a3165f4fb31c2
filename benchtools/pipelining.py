"""Pipelined against plain late binding in the simulator: job response time at
10,000 workers x 1 slot, 100-task jobs, loads 0.5-0.95, short and heavy-tailed durations, at the
runtime's scheduler round trip (network_delay 0.15 ms one way: 0.3 ms, docs/runtime.md), over
several seeds. Prints a Markdown table: p50 and p99 per variant (the range over seeds) and each
variant's p50 and p99 over plain Sparrow's on the same arrivals (the range over seeds).

    python -m benchtools.pipelining                       # the table of docs/simulator.md (~10 min)
    python -m benchtools.pipelining --seeds 1 --jobs 500  # a quick look
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sparrow_core.sim import SimConfig, simulate

LOADS = (0.5, 0.7, 0.8, 0.9, 0.95)
MEAN = 0.005  # "a few ms": the short tasks where a 0.3 ms round trip is 6% of a task
WORKLOADS = {
    "exponential": SimConfig(duration="exponential"),
    "bimodal": SimConfig(duration="bimodal", bimodal_long_fraction=0.05, bimodal_ratio=20.0),
    "per_job": SimConfig(duration="per_job"),
    "constant": SimConfig(duration="constant"),  # predictable tasks: where asking at the median's end pays
}
DEFAULT_WORKLOADS = ("exponential", "bimodal", "per_job")
# (label, policy, pipeline_after); the first is the baseline every ratio is over.
VARIANTS = (
    ("sparrow", "sparrow", 0.0),
    ("pipelined@0", "sparrow_pipelined", 0.0),
    ("pipelined@0.5", "sparrow_pipelined", 0.5),
    ("pipelined@0.9", "sparrow_pipelined", 0.9),
    ("pipelined@1", "sparrow_pipelined", 1.0),
    ("steal", "sparrow_steal", 0.0),
    ("steal+pipelined@0", "sparrow_steal_pipelined", 0.0),
)


Row = tuple[float, float, dict[str, int], int]  # one seed's p50, p99 (s), counters and tasks


def run_variants(
    base: SimConfig, load: float, variants: Sequence[tuple[str, dict[str, Any]]], seeds: Sequence[int]
) -> dict[str, list[Row]]:
    """Each variant (a label and its SimConfig fields over `base`) at `load`, once per seed."""
    rows: dict[str, list[Row]] = {}
    for label, fields in variants:
        for seed in seeds:
            result = simulate(replace(base, load=load, seed=seed, **fields))
            s = result.summary()
            rows.setdefault(label, []).append((s["p50"], s["p99"], result.counters, result.n_tasks))
    return rows


def on_the_cluster(workload: SimConfig, args: argparse.Namespace, **fields: Any) -> SimConfig:
    """`workload` on args.workers x 1 slot, args.jobs jobs of args.tasks_per_job tasks (default 100),
    args.network_delay one way."""
    return replace(
        workload,
        n_workers=args.workers,
        tasks_per_job=getattr(args, "tasks_per_job", 100),
        n_jobs=args.jobs,
        network_delay=args.network_delay,
        keep_task_waits=False,
        **fields,
    )


def over(values: Sequence[Row], baseline: Sequence[Row], i: int) -> list[float]:
    """Per seed, field i (0: p50, 1: p99) of `values` over the baseline's."""
    return [v[i] / b[i] for v, b in zip(values, baseline, strict=True)]


def per_task(values: Sequence[Row], counter: str) -> list[float]:
    return [v[2][counter] / max(1, v[3]) for v in values]


def table_row(
    name: str, load: float, label: str, values: Sequence[Row], plain: Sequence[Row], *more: Sequence[float]
) -> str:
    """One markdown row of a variant: its p50 and p99 (ms) and their ratios to plain Sparrow's on the same
    arrivals, then a cell per list in `more`; each a range over the seeds."""
    p50 = [v[0] * 1e3 for v in values]
    p99 = [v[1] * 1e3 for v in values]
    cells = [_range(p50, 2), _range(p99, 2), _range(over(values, plain, 0), 2), _range(over(values, plain, 1), 2)]
    cells += [_range(extra, 2) for extra in more]
    return f"| {name} | {load} | {label} | " + " | ".join(cells) + " |"


def _range(values: Sequence[float], digits: int = 3) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f}-{hi:.{digits}f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma list of seeds")
    parser.add_argument("--jobs", type=int, default=5000, help="jobs per run")
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument("--loads", default=",".join(map(str, LOADS)))
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS), help=f"of {', '.join(WORKLOADS)}")
    parser.add_argument(
        "--variants", default=",".join(v[0] for v in VARIANTS if v[0] != "pipelined@0.9"), help="labels of VARIANTS"
    )
    parser.add_argument("--network-delay", type=float, default=0.00015, help="one way, seconds")
    parser.add_argument("--mean-duration", type=float, default=MEAN)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    loads = [float(x) for x in args.loads.split(",")]
    chosen = [v for v in VARIANTS if v[0] in args.variants.split(",")]
    if chosen[0][0] != "sparrow":
        chosen.insert(0, VARIANTS[0])
    print(
        f"{args.workers} workers x 1 slot, 100-task jobs, {args.jobs} jobs, mean task {args.mean_duration * 1e3:g} ms, "
        f"round trip {2 * args.network_delay * 1e3:g} ms, seeds {args.seeds}; times in ms\n"
    )
    print("| workload | load | variant | p50 | p99 | p50 / sparrow | p99 / sparrow | bound ahead / task |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        base = on_the_cluster(WORKLOADS[name], args, mean_duration=args.mean_duration)
        variants = [(label, {"policy": policy, "pipeline_after": after}) for label, policy, after in chosen]
        for load in loads:
            rows = run_variants(base, load, variants, seeds)
            for label, values in rows.items():
                print(
                    table_row(name, load, label, values, rows["sparrow"], per_task(values, "bound_ahead")), flush=True
                )


if __name__ == "__main__":
    main()
