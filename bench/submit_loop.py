"""`submit` called once per task, as most `concurrent.futures` code calls an executor: SparrowExecutor
(2 node monitors x 1 slot) against `ProcessPoolExecutor(2)`, no-op tasks, alternating in one run so
that the ratio survives a noisy machine (the submit-loop figure; bench_peers.py prints it too).

Script: `python -m bench.submit_loop [--tasks 5000] [--rounds 3] [--executor process|thread]`.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor, wait

SUBMIT_TASKS = 5000
SLOTS = 2
WARM_UP = 100

try:
    from bench.cluster_options import cluster_options
except ImportError:  # run as a script from bench/
    from cluster_options import cluster_options

try:
    from sparrow_runtime import LocalCluster, SparrowExecutor
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None


def _loop(executor, n_tasks: int) -> float:
    """Tasks per second of `n_tasks` calls `executor.submit(int, i)`, then waiting for them all."""
    wait([executor.submit(int, 0) for _ in range(WARM_UP)])  # workers, connections
    start = time.perf_counter()
    futures = [executor.submit(int, i) for i in range(n_tasks)]
    wait(futures)
    assert all(f.result() == i for i, f in enumerate(futures))
    return n_tasks / (time.perf_counter() - start)


def sparrow_submit_loop(executor: str = "process", n_tasks: int = SUBMIT_TASKS, pipeline: int | None = None) -> float:
    options = cluster_options(executor, pipeline)  # None: the build's default
    with (
        LocalCluster(schedulers=1, node_monitors=SLOTS, slots=1, dashboard=False, **options) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        return _loop(ex, n_tasks)


def pool_submit_loop(n_tasks: int = SUBMIT_TASKS) -> float:
    with ProcessPoolExecutor(SLOTS) as pool:
        return _loop(pool, n_tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=SUBMIT_TASKS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--executor", choices=("process", "thread"), default="process", help="Sparrow's executors")
    args = parser.parse_args()
    if LocalCluster is None:
        parser.exit(2, "bench/submit_loop.py needs sparrow_runtime: pip install -e .\n")
    load = os.getloadavg()[0]
    ratios = []
    for i in range(args.rounds):
        ours, pool = sparrow_submit_loop(args.executor, args.tasks), pool_submit_loop(args.tasks)
        ratios.append(ours / pool)
        print(
            f"round {i + 1}: Sparrow {ours:,.0f} tasks/s, ProcessPoolExecutor(2) {pool:,.0f} tasks/s, "
            f"ratio {ours / pool:.2f}x",
            flush=True,
        )
    print(
        f"{args.tasks:,} submits, executor={args.executor}: ratio {min(ratios):.2f}-{max(ratios):.2f}x; "
        f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
