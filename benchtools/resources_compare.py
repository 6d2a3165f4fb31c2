"""Sparrow's placement with resources against the omniscient multi-resource packer, in the resource
simulator (sparrow_core.sim.simulate_resources), on the same arrivals: utilisation of each kind,
response-time p50 and p99, and the wait of the largest requests, for the two workloads of
RESOURCE_WORKLOADS ("gpu": 10% of the tasks need a GPU, which 10% of the hosts have; "mixed": tasks of
mixed CPU and memory sizes) at each load.

    python benchtools/resources_compare.py                          # 10,000 hosts, loads 0.5 0.8 0.9 (minutes)
    python benchtools/resources_compare.py --workers 1000 --jobs 20000 --loads 0.8

Prints one Markdown table per workload (docs/results/resources.md holds a dated run).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from sparrow_core.sim import RESOURCE_PLACEMENTS, RESOURCE_WORKLOADS, ResourceSimConfig, simulate_resources

COLUMNS = ("load", "policy", "utilisation", "p50", "p99", "largest_wait_p50", "largest_wait_p99", "wall_s")


def rows(config: ResourceSimConfig, loads: list[float]) -> list[dict[str, str]]:
    """One row per (load, placement) of `config`."""
    out = []
    for load in loads:
        for policy in RESOURCE_PLACEMENTS:
            run = simulate_resources(replace(config, load=load, policy=policy))
            s = run.summary()
            utilisation = " ".join(f"{kind} {s[f'util_{kind}']:.2f}" for kind in config.kinds if f"util_{kind}" in s)
            out.append(
                {
                    "load": f"{load:g}",
                    "policy": policy,
                    "utilisation": utilisation,
                    **{key: f"{s[key] * 1000:.1f} ms" for key in COLUMNS[3:7]},
                    "wall_s": f"{run.wall_time:.1f}",
                }
            )
    return out


def table(found: list[dict[str, str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row[c] for c in COLUMNS) + " |" for row in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument(
        "--jobs", type=int, default=1_000_000, help="jobs per run (some 20 s simulated at 10,000 hosts)"
    )
    parser.add_argument("--tasks-per-job", type=int, default=10)
    parser.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8, 0.9])
    parser.add_argument("--workloads", nargs="+", default=list(RESOURCE_WORKLOADS), choices=list(RESOURCE_WORKLOADS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for name in args.workloads:
        config = ResourceSimConfig.of(
            name, n_workers=args.workers, n_jobs=args.jobs, tasks_per_job=args.tasks_per_job, seed=args.seed
        )
        print(f"\n### {name}: {args.workers} hosts, {args.jobs} jobs of {args.tasks_per_job} tasks, seed {args.seed}\n")
        print(table(rows(config, args.loads)), flush=True)


if __name__ == "__main__":
    main()
