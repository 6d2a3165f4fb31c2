"""Tasks of several users interleaved on one node monitor, under two builds alternately: what keeping each
worker process to one user costs when users take turns (runtime/services/idle_workers.py).

`python -m benchtools.tenants --python BASE_PYTHON [--users 3] [--jobs 60] [--repeat 3]` (from a folder that
holds no sparrow_core, so each interpreter imports its own build) runs, `--repeat` times and alternating with
this interpreter, a child per interpreter: a LocalCluster of one node monitor with
2 slots and process executors, one SparrowExecutor per user (`user=u0, u1, ...`), and `--jobs` 10-task jobs
(`map(int, range(10))`) whose users take turns. It prints per build the first pass over the users (each
user's first job: where a new worker starts for a user with none idle) and the steady jobs' tasks/s and p50.
Figures of one build are each run's; compare the builds' medians, run by run (the machine's load hits both
alike). Needs sparrow_runtime in both interpreters.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

JOB_SIZE = 10
SLOTS = 2


def measure(users: int, jobs: int) -> dict[str, float]:
    """One child's figures: seconds of the first pass over the users, steady tasks/s and job p50 (ms)."""
    from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor

    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=SLOTS, dashboard=False
    ) as cluster:
        executors = [SparrowExecutor(cluster.schedulers, secret=cluster.secret, user=f"u{i}") for i in range(users)]
        try:
            start = time.perf_counter()
            for ex in executors:  # each user's first job
                list(ex.map(int, range(JOB_SIZE)))
            first = time.perf_counter() - start
            latencies = []
            start = time.perf_counter()
            for i in range(jobs):
                began = time.perf_counter()
                list(executors[i % users].map(int, range(JOB_SIZE)))
                latencies.append(time.perf_counter() - began)
            steady = time.perf_counter() - start
        finally:
            for ex in executors:
                ex.shutdown()
    return {
        "first_pass_s": first,
        "tasks_per_s": jobs * JOB_SIZE / steady,
        "p50_ms": statistics.median(latencies) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="the other build's interpreter (alternating with this one)")
    parser.add_argument("--users", type=int, default=3, help="users taking turns (default 3)")
    parser.add_argument("--jobs", type=int, default=60, help="steady 10-task jobs per run (default 60)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per build, alternating (default 3)")
    parser.add_argument("--json", action="store_true", help="(a child) measure under this interpreter, print JSON")
    args = parser.parse_args()
    if min(args.users, args.jobs, args.repeat) < 1:
        parser.error("--users, --jobs and --repeat must be >= 1")
    if args.json:
        print(json.dumps(measure(args.users, args.jobs)))
        return
    builds = {"base": args.python, "head": sys.executable}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
    for _ in range(args.repeat):
        for name, python in builds.items():
            command = [python, os.path.abspath(__file__), "--json", "--python", python]
            command += ["--users", str(args.users), "--jobs", str(args.jobs)]
            out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=900).stdout
            runs[name].append(json.loads(out.splitlines()[-1]))
    print(f"tenants: {args.users} users taking turns, {args.jobs} jobs of {JOB_SIZE} tasks, {args.repeat} runs each")
    for figure, label in (("first_pass_s", "first pass s"), ("tasks_per_s", "tasks/s"), ("p50_ms", "job p50 ms")):
        values = {name: [run[figure] for run in runs[name]] for name in builds}
        medians = {name: statistics.median(v) for name, v in values.items()}
        shown = "  ".join(
            f"{name} {medians[name]:.3f} ({', '.join(f'{x:.3f}' for x in v)})" for name, v in values.items()
        )
        print(f"  {label:14} {shown}  head/base {medians['head'] / medians['base']:.2f}")


if __name__ == "__main__":
    main()
