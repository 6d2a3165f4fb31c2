"""The runtime against a ProcessPoolExecutor(2) in the same run (issue 21): what a
`concurrent.futures` user compares Sparrow with, and the figures `python -m bench.gate` holds.

A LocalCluster of 1 scheduler + 2 node monitors x 1 slot (process executors) on loopback, driven
through the synchronous `SparrowExecutor`, beside `ProcessPoolExecutor(2)`, the two alternating in
each round (Sparrow, pool, Sparrow, pool, ...) so that a shared machine's load hits both alike:

- map: `list(ex.map(int, range(MAP_TASKS)))`, tasks/s;
- submit loop: `[ex.submit(int, i) for i in range(SUBMIT_TASKS)]`, waited for, tasks/s;
- 10-task job: `list(ex.map(int, range(10)))` one at a time, p50 of its latency;
- 80%-load overhead: bench/open_loop.py's run (10-task jobs of 10 ms at 80% of the 2 slots), the
  runtime's p50 of (job response - 10 ms) over the zero-overhead floor's for the same arrivals.

Each figure is a ratio of Sparrow's time to the baseline's (lower is better, as asv assumes; 1.0 =
as fast as the pool), the median over ROUNDS rounds of one run. asv: `RuntimeVsPool.track_*`.
Script: `python bench/bench_vs_pool.py [--rounds N] [--json]` prints the rates, latencies and
ratios of one run; `--python PY` (repeatable) runs the same measurement under other interpreters
(other builds of the package, e.g. a worktree of an old commit with its own venv), alternating them
round by round, and prints each build's figures side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait

try:
    from bench import open_loop
except ModuleNotFoundError:  # run as `python bench/bench_vs_pool.py`: bench/ is on sys.path, its parent is not
    import open_loop

try:
    from sparrow_runtime import LocalCluster, SparrowExecutor
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None

SLOTS = 2
MAP_TASKS = 5_000
SUBMIT_TASKS = 2_000
JOBS = 50  # 10-task jobs, one at a time, per round
JOB_SIZE = 10
ROUNDS = 3

# Per system and round: map and submit in tasks/s, job_p50 in seconds; *_cpu: CPU seconds per task of
# every process involved (this one, the cluster's or the pool's), which a busy machine moves less.
FIGURES = ("map", "submit", "job_p50", "map_cpu", "submit_cpu", "job_cpu")


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and every live descendant (Linux /proc; 0.0 elsewhere)."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total


def measure(ex, map_tasks: int = MAP_TASKS, submit_tasks: int = SUBMIT_TASKS, jobs: int = JOBS) -> dict[str, float]:
    """One round of the no-op figures on `ex` (a SparrowExecutor or a ProcessPoolExecutor)."""
    list(ex.map(int, range(JOB_SIZE * 10)))  # warm up: workers, connections
    cpu, start = tree_cpu_seconds(), time.perf_counter()
    list(ex.map(int, range(map_tasks)))
    map_rate = map_tasks / (time.perf_counter() - start)
    now = tree_cpu_seconds()
    map_cpu, cpu = (now - cpu) / map_tasks, now
    start = time.perf_counter()
    wait([ex.submit(int, i) for i in range(submit_tasks)])
    submit_rate = submit_tasks / (time.perf_counter() - start)
    now = tree_cpu_seconds()
    submit_cpu, cpu = (now - cpu) / submit_tasks, now
    latencies = []
    for _ in range(jobs):
        start = time.perf_counter()
        list(ex.map(int, range(JOB_SIZE)))
        latencies.append(time.perf_counter() - start)
    job_cpu = (tree_cpu_seconds() - cpu) / (jobs * JOB_SIZE)
    return {"map": map_rate, "submit": submit_rate, "job_p50": statistics.median(latencies),
            "map_cpu": map_cpu, "submit_cpu": submit_cpu, "job_cpu": job_cpu}  # fmt: skip


def ratios(sparrow: dict[str, float], pool: dict[str, float]) -> dict[str, float]:
    """Sparrow's time over the pool's per figure (lower is better)."""
    return {
        "map": pool["map"] / sparrow["map"],
        "submit": pool["submit"] / sparrow["submit"],
        **{k: sparrow[k] / pool[k] for k in ("job_p50", "map_cpu", "submit_cpu", "job_cpu")},
    }


def run_rounds(rounds: int = ROUNDS, transport: str = "tcp", **sizes: int) -> list[dict[str, dict[str, float]]]:
    """`rounds` rounds alternating one cluster and one pool: per round {"sparrow": ..., "pool": ...}."""
    results = []
    options = {} if transport == "tcp" else {"transport": transport}  # older builds: TCP only
    with LocalCluster(schedulers=1, node_monitors=SLOTS, slots=1, executor="process", **options) as cluster:
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex, ProcessPoolExecutor(SLOTS) as pool:
            for _ in range(rounds):
                results.append({"sparrow": measure(ex, **sizes), "pool": measure(pool, **sizes)})
    return results


def load_ratio() -> float:
    """The 80%-load case: the runtime's p50 of (response - task) over the floor's (bench/open_loop.py)."""
    runtime, floor = open_loop.run_on_local_cluster(open_loop.LoadSpec()).beyond_task_ms(50)
    return runtime / floor


class RuntimeVsPool:
    """Sparrow's time over a ProcessPoolExecutor(2)'s (or the zero-overhead floor's), measured in the
    same run: the runtime figures the regression gate holds (bench/gate.py)."""

    timeout = 300

    def setup_cache(self) -> dict[str, float | str]:
        if LocalCluster is None:  # not None: asv would then call setup without the cache
            return {"unavailable": "sparrow_runtime has no LocalCluster / SparrowExecutor"}
        runs = [ratios(r["sparrow"], r["pool"]) for r in run_rounds()]
        figures: dict[str, float | str] = {k: statistics.median(r[k] for r in runs) for k in FIGURES}
        try:
            figures["load"] = load_ratio()
        except NotImplementedError as missing:
            figures["load_unavailable"] = str(missing)
        return figures

    def setup(self, figures: dict[str, float | str]) -> None:
        if "unavailable" in figures:
            raise NotImplementedError(figures["unavailable"])

    def track_map_time_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["map"]

    track_map_time_vs_pool.unit = "ratio"

    def track_submit_time_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["submit"]

    track_submit_time_vs_pool.unit = "ratio"

    def track_job_p50_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["job_p50"]

    track_job_p50_vs_pool.unit = "ratio"

    def track_map_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["map_cpu"]

    track_map_cpu_vs_pool.unit = "ratio"

    def track_submit_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["submit_cpu"]

    track_submit_cpu_vs_pool.unit = "ratio"

    def track_job_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["job_cpu"]

    track_job_cpu_vs_pool.unit = "ratio"

    def track_load_overhead_vs_floor(self, figures: dict[str, float | str]) -> float:
        if "load_unavailable" in figures:
            raise NotImplementedError(figures["load_unavailable"])
        return figures["load"]

    track_load_overhead_vs_floor.unit = "ratio"


def _span(values: list[float], fmt: str) -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def _one_build(pythons: list[str], args: argparse.Namespace) -> list[list[dict]]:
    """Per interpreter, its rounds: each a child `--json --rounds 1` run, interpreters alternating."""
    per_python: list[list[dict]] = [[] for _ in pythons]
    for _ in range(args.rounds):
        for i, python in enumerate(pythons):
            command = [python, os.path.abspath(__file__), "--json", "--rounds", "1", "--map-tasks", str(args.map_tasks),
                       "--submit-tasks", str(args.submit_tasks), "--jobs", str(args.jobs),
                       "--transport", args.transport]  # fmt: skip
            out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=600).stdout
            per_python[i].extend(json.loads(out.splitlines()[-1]))
    return per_python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds alternating Sparrow and the pool")
    parser.add_argument("--map-tasks", type=int, default=MAP_TASKS)
    parser.add_argument("--submit-tasks", type=int, default=SUBMIT_TASKS)
    parser.add_argument("--jobs", type=int, default=JOBS, help="10-task jobs per round for the p50")
    parser.add_argument("--load", action="store_true", help="also the 80%%-load overhead over the floor")
    parser.add_argument("--transport", choices=("tcp", "unix"), default="tcp", help="LocalCluster's (default tcp)")
    parser.add_argument("--json", action="store_true", help="print the rounds as one JSON line")
    parser.add_argument("--python", action="append", default=[],
                        help="run under this interpreter too (repeatable), alternating with this one")  # fmt: skip
    args = parser.parse_args()
    if min(args.rounds, args.map_tasks, args.submit_tasks, args.jobs) < 1:
        parser.error("--rounds, --map-tasks, --submit-tasks and --jobs must be >= 1")
    if LocalCluster is None:
        parser.exit(2, "bench_vs_pool.py needs sparrow_runtime: pip install -e .\n")
    sizes = {"map_tasks": args.map_tasks, "submit_tasks": args.submit_tasks, "jobs": args.jobs}
    load_before = os.getloadavg()[0]
    if args.python:
        pythons = [sys.executable, *args.python]
        builds = _one_build(pythons, args)
    else:
        pythons = [sys.executable]
        builds = [run_rounds(args.rounds, args.transport, **sizes)]
    if args.json:
        print(json.dumps(builds[0]))
        return
    load_after = os.getloadavg()[0]
    print(f"{args.map_tasks:,}-task map, {args.submit_tasks:,} submits, {args.jobs} 10-task jobs per round; "
          f"{args.rounds} rounds; median (range); load average {load_before:.2f} -> {load_after:.2f}")  # fmt: skip
    for python, rounds in zip(pythons, builds, strict=True):
        rs = [ratios(r["sparrow"], r["pool"]) for r in rounds]
        print(f"{python}:")
        for name, label in (("map", "map tasks/s"), ("submit", "submit-loop tasks/s")):
            print(f"  {label:<22} Sparrow {_span([r['sparrow'][name] for r in rounds], '{:,.0f}')}  "
                  f"pool {_span([r['pool'][name] for r in rounds], '{:,.0f}')}  "
                  f"Sparrow/pool {_span([1 / r[name] for r in rs], '{:.2f}x')}")  # fmt: skip
        ms = {side: _span([1e3 * r[side]["job_p50"] for r in rounds], "{:.2f}") for side in ("sparrow", "pool")}
        print(f"  {'10-task job p50 ms':<22} Sparrow {ms['sparrow']}  pool {ms['pool']}  "
              f"Sparrow/pool {_span([r['job_p50'] for r in rs], '{:.2f}x')}")  # fmt: skip
        for name in ("map", "submit", "job"):
            us = {side: _span([1e6 * r[side][name + "_cpu"] for r in rounds], "{:.0f}") for side in ("sparrow", "pool")}
            print(f"  {name + ' CPU us/task':<22} Sparrow {us['sparrow']}  pool {us['pool']}  "
                  f"Sparrow/pool {_span([r[name + '_cpu'] for r in rs], '{:.2f}x')}")  # fmt: skip
    if args.load:
        loads = [load_ratio() for _ in range(args.rounds)]
        print(f"80%-load p50 of (response - 10 ms), runtime / floor: {_span(loads, '{:.2f}x')}")


if __name__ == "__main__":
    main()
