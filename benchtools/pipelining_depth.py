"""Pipelining depth N in the simulator: job response time at 10,000 workers x 1 slot,
100-task jobs, the runtime's scheduler round trip (0.3 ms), for pipelined late binding 1, 4 and 16 deep
(`pipeline_depth`, the runtime's --pipeline-depth rules: policy/pipeline.h), ungated and gated
(`pipeline_gate`: asking ahead at all only while each of the worker's last 8 run times is under 5 ms),
gated and just in time (`pipeline_jit`, the runtime's --pipeline-jit: also one deep just before a running task's
predicted end while the worker's run times are steady), gated and steady (`pipeline_steady`, --pipeline-steady: the
same opening, asked at the running task's start), against plain Sparrow and the omniscient scheduler
on the same arrivals. Workloads: no-op-like tasks (constant 0.5 ms), exponential, per_job and bimodal (5%
of tasks 20x) tasks of 10 ms mean, and constant 10 ms tasks (`constant`, as benchtools/pipelining_ten_ms.py). Prints a
Markdown table: p50 and p99 (ms, the range over seeds) and each variant's p50 and p99 over Sparrow's and
over omniscient's.

    python -m benchtools.pipelining_depth                        # the table of docs/runtime.md (a few minutes)
    python -m benchtools.pipelining_depth --seeds 1 --jobs 500   # a quick look
    python -m benchtools.pipelining_depth --workers 2 --tasks-per-job 10 --jobs 4000 --seeds 1,2,3 \
        --workloads exponential,per_job,bimodal,constant --variants "depth 16,gated 16,jit 16"  # runtime.md's
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from sparrow_core.sim import SimConfig

from .pipelining import on_the_cluster, over, per_task, run_variants, table_row

LOADS = (0.5, 0.7, 0.8, 0.9, 0.95)
WORKLOADS = {
    "noop": SimConfig(duration="constant", mean_duration=0.0005),
    "exponential": SimConfig(duration="exponential", mean_duration=0.01),
    "per_job": SimConfig(duration="per_job", mean_duration=0.01),
    "bimodal": SimConfig(duration="bimodal", mean_duration=0.01, bimodal_long_fraction=0.05, bimodal_ratio=20.0),
    "constant": SimConfig(duration="constant", mean_duration=0.01),
}
DEFAULT_WORKLOADS = ("noop", "exponential", "per_job", "bimodal")
# (label, policy, pipeline_depth, pipeline_gate, pipeline_jit, pipeline_steady); the first two are the baselines every
# ratio is over.
VARIANTS = (
    ("sparrow", "sparrow", 1, False, False, False),
    ("omniscient", "omniscient", 1, False, False, False),
    ("depth 1", "sparrow_pipelined", 1, False, False, False),
    ("depth 4", "sparrow_pipelined", 4, False, False, False),
    ("depth 16", "sparrow_pipelined", 16, False, False, False),
    ("gated 1", "sparrow_pipelined", 1, True, False, False),
    ("gated 16", "sparrow_pipelined", 16, True, False, False),
    ("jit 16", "sparrow_pipelined", 16, True, True, False),
    ("steady 16", "sparrow_pipelined", 16, True, False, True),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2", help="comma list of seeds")
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per run")
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument("--tasks-per-job", type=int, default=100, help="10 with --workers 2: the runtime bench's shape")
    parser.add_argument("--loads", default=",".join(map(str, LOADS)))
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS), help=f"of {', '.join(WORKLOADS)}")
    parser.add_argument(
        "--variants", default=",".join(v[0] for v in VARIANTS), help="labels of VARIANTS (sparrow, omniscient always)"
    )
    parser.add_argument("--network-delay", type=float, default=0.00015, help="one way, seconds")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    loads = [float(x) for x in args.loads.split(",")]
    chosen = {"sparrow", "omniscient", *args.variants.split(",")}
    unknown = chosen - {v[0] for v in VARIANTS}
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    print(
        f"{args.workers} workers x 1 slot, {args.tasks_per_job}-task jobs, {args.jobs} jobs, round trip "
        f"{2 * args.network_delay * 1e3:g} ms, seeds {args.seeds}; times in ms\n"
    )
    print(
        "| workload | load | variant | p50 | p99 | p50 / sparrow | p99 / sparrow | p50 / omniscient "
        "| asked ahead / task |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.workloads.split(","):
        base = on_the_cluster(WORKLOADS[name], args)
        variants = [
            (
                label,
                {
                    "policy": policy,
                    "pipeline_depth": depth,
                    "pipeline_gate": gate,
                    "pipeline_jit": jit,
                    "pipeline_steady": steady,
                },
            )
            for label, policy, depth, gate, jit, steady in VARIANTS
            if label in chosen
        ]
        for load in loads:
            rows = run_variants(base, load, variants, seeds)
            plain, ideal = rows["sparrow"], rows["omniscient"]
            for label, values in rows.items():
                ahead = per_task(values, "asked_ahead")
                print(table_row(name, load, label, values, plain, over(values, ideal, 0), ahead), flush=True)


if __name__ == "__main__":
    main()
