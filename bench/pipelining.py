"""Pipelined against plain late binding in the simulator (issue 21 item 4): job response time at
10,000 workers x 1 slot, 100-task jobs, loads 0.5-0.95, short and heavy-tailed durations, at the
runtime's scheduler round trip (network_delay 0.15 ms one way: 0.3 ms, docs/runtime.md), over
several seeds. Prints a Markdown table: p50 and p99 per variant (the range over seeds) and each
variant's p50 and p99 over plain Sparrow's on the same arrivals (the range over seeds).

    python -m bench.pipelining                       # the table of docs/simulator.md (~10 min)
    python -m bench.pipelining --seeds 1 --jobs 500  # a quick look
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

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
        base = replace(
            WORKLOADS[name],
            n_workers=args.workers,
            tasks_per_job=100,
            n_jobs=args.jobs,
            mean_duration=args.mean_duration,
            network_delay=args.network_delay,
            keep_task_waits=False,
        )
        for load in loads:
            rows: dict[str, list[tuple[float, float, float]]] = {}
            for label, policy, after in chosen:
                for seed in seeds:
                    result = simulate(replace(base, policy=policy, pipeline_after=after, load=load, seed=seed))
                    s = result.summary()
                    bound = result.counters["bound_ahead"] / max(1, result.n_tasks)
                    rows.setdefault(label, []).append((s["p50"], s["p99"], bound))
            plain = rows["sparrow"]
            for label, values in rows.items():
                p50 = [v[0] * 1e3 for v in values]
                p99 = [v[1] * 1e3 for v in values]
                r50 = [v[0] / b[0] for v, b in zip(values, plain, strict=True)]
                r99 = [v[1] / b[1] for v, b in zip(values, plain, strict=True)]
                bound = [v[2] for v in values]
                print(
                    f"| {name} | {load} | {label} | {_range(p50, 2)} | {_range(p99, 2)} | {_range(r50, 2)} | "
                    f"{_range(r99, 2)} | {_range(bound, 2)} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
