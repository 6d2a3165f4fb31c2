"""Tasks bound with their reservations to idle node monitors (the scheduler's `bind_idle`) against plain late
binding, in the same run: two LocalClusters of 1 scheduler + 2 node monitors x 1 slot (process executors), one
with `bind_idle=True` (the default), one with `bind_idle=False`, beside a ProcessPoolExecutor(2),
the three alternating figure by figure so that a shared machine's load hits them alike:

- k-task jobs one at a time (`list(ex.map(int, range(k)))` through SparrowExecutor), p50 latency and CPU time
  per job (every process of the run), for k = 1 and 10 (a small job's first round trip is most of it);
- with `--load-seconds S`: the 80%-load case of bench/open_loop.py (10-task jobs of 10 ms, Poisson arrivals,
  the same for both clusters), p50 of (job response - 10 ms) over the zero-overhead floor's.

Script: `python bench/bench_bind_idle.py [--rounds N] [--jobs N] [--pipeline-depth N] [--load-seconds S]
[--task-us US]`; prints per figure the median and range over the rounds and the on/off ratio of each round.
`--task-us US`: the k-task jobs' tasks keep a CPU busy US microseconds each, for the rules that depend on how
short the tasks are (run it under another build's python to compare its rule: the script imports the installed
package).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

try:
    from bench import open_loop
    from bench.bench_vs_pool import tree_cpu_seconds
    from bench.cluster_options import cluster_options
except ModuleNotFoundError:  # run as `python bench/bench_bind_idle.py`: bench/ is on sys.path, its parent is not
    import open_loop
    from bench_vs_pool import tree_cpu_seconds
    from cluster_options import cluster_options

try:
    from sparrow_runtime import LocalCluster, SparrowExecutor
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None

SLOTS = 2
JOB_SIZES = (1, 10)


def spin(us: float, i: int) -> int:
    """A task that keeps its CPU busy for `us` microseconds (a sleep would leave the CPU to the others)."""
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass
    return i


def p50_ms(ex, size: int, jobs: int, task_us: float = 0.0) -> tuple[float, float]:
    """The median latency, ms, of `jobs` jobs of `size` tasks (no-op, or spinning `task_us` us each) run one at a
    time on `ex`, and the CPU time per job, ms, of this process and its descendants (both clusters and the pool:
    the idle ones add their heartbeats alike to every side)."""
    latencies = []
    task = partial(spin, task_us) if task_us else int
    cpu = tree_cpu_seconds()
    for _ in range(jobs):
        start = time.perf_counter()
        list(ex.map(task, range(size)))
        latencies.append(time.perf_counter() - start)
    return 1e3 * statistics.median(latencies), 1e3 * (tree_cpu_seconds() - cpu) / jobs


def run(rounds: int, jobs: int, depth: int, load_seconds: float, task_us: float = 0.0) -> dict[str, list[float]]:
    """Per figure and side ("off", "on", "pool"), its value in each round; `task_us`: the tasks spin so long."""
    figures: dict[str, list[float]] = {}
    spec = open_loop.LoadSpec(seconds=load_seconds) if load_seconds else None
    arrivals = spec.workload().arrivals if spec is not None else None
    with (
        LocalCluster(
            node_monitors=SLOTS, slots=1, dashboard=False, **cluster_options("process", depth or None, False)
        ) as off,
        LocalCluster(
            node_monitors=SLOTS, slots=1, dashboard=False, **cluster_options("process", depth or None, True)
        ) as on,
        SparrowExecutor(off.schedulers, secret=off.secret) as ex_off,
        SparrowExecutor(on.schedulers, secret=on.secret) as ex_on,
        ProcessPoolExecutor(SLOTS) as pool,
    ):
        executors = {"off": ex_off, "on": ex_on, "pool": pool}
        for ex in executors.values():
            list(ex.map(int, range(100)))  # warm up: workers, connections
        for _ in range(rounds):
            for size in JOB_SIZES:
                for side, ex in executors.items():
                    p50, cpu = p50_ms(ex, size, jobs, task_us)
                    figures.setdefault(f"{size}-task p50 ms/{side}", []).append(p50)
                    figures.setdefault(f"{size}-task CPU ms/job/{side}", []).append(cpu)
            if spec is not None:
                for side, cluster in (("off", off), ("on", on)):
                    ours, floor = open_loop.run_open_loop(cluster, spec, arrivals).beyond_task_ms(50)
                    figures.setdefault(f"80%-load p50 / floor/{side}", []).append(ours / floor)
    return figures


def _span(values: list[float], fmt: str) -> str:
    return fmt.format(statistics.median(values)) + (
        f" ({fmt.format(min(values))}-{fmt.format(max(values))})" if len(values) > 1 else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each figure alternating the three")
    parser.add_argument("--jobs", type=int, default=20, help="jobs of each size per round and side")
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        default=0,
        metavar="N",
        help="both clusters pipeline N deep (0: the build's default)",
    )
    parser.add_argument(
        "--load-seconds", type=float, default=0.0, metavar="S", help="also the 80%%-load case, S s of arrivals"
    )
    parser.add_argument(
        "--task-us",
        type=float,
        default=0.0,
        metavar="US",
        help="the k-task jobs' tasks keep a CPU busy US microseconds each (0: no-op, `int`)",
    )
    args = parser.parse_args()
    if min(args.rounds, args.jobs) < 1 or min(args.pipeline_depth, args.load_seconds, args.task_us) < 0:
        parser.error("--rounds and --jobs must be >= 1, --pipeline-depth, --load-seconds and --task-us >= 0")
    if LocalCluster is None:
        parser.exit(2, "bench_bind_idle.py needs sparrow_runtime: pip install -e .\n")
    load_before = os.getloadavg()[0]
    figures = run(args.rounds, args.jobs, args.pipeline_depth, args.load_seconds, args.task_us)
    for name in dict.fromkeys(key.rpartition("/")[0] for key in figures):
        sides = {side: figures[f"{name}/{side}"] for side in ("off", "on", "pool") if f"{name}/{side}" in figures}
        fmt = "{:.2f}x" if "floor" in name else "{:.2f}"
        row = "  ".join(f"{side} {_span(values, fmt)}" for side, values in sides.items())
        ratio = [b / a for a, b in zip(sides["off"], sides["on"], strict=True)]
        print(f"{name:<22} {row}  on/off {_span(ratio, '{:.2f}x')}")
    depth = f"pipelined {args.pipeline_depth} deep" if args.pipeline_depth else "the build's pipelining"
    tasks = f"tasks of {args.task_us:g} us" if args.task_us else "no-op tasks"
    print(
        f"{args.rounds} rounds of {args.jobs} jobs per size and side, {tasks}; {depth}; "
        f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
