"""Sparrow's runtime figures beside a peer's, measured in the same run: the throughput and latency of
bench_runtime.py on Sparrow and on Dask distributed, alternating the two (Sparrow, Dask, Sparrow, ...)
so that the noise of a shared machine hits both alike, and Sparrow's figures can be quoted as ratios.

Dask setup: `distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`, its
dashboard on any free port (never a fixed one two runs would share), logs silenced, a fresh cluster per run: two worker processes of one slot each and a
scheduler on loopback TCP, as Sparrow's 2 node monitors x 1 slot and 1 scheduler (Dask's LocalCluster
runs its scheduler on a thread of the calling process, Sparrow's in a process of its own). It is
driven by an async `distributed.Client`, as Sparrow's side by its async Client (a sync Client adds a
thread hop per call). A job of k tasks is what a Dask user writes for k calls:
`client.gather(client.map(int, range(k), pure=False))`: `int` as Sparrow's no-op, `pure=False` so
that jobs share no keys (no result reuse), `gather` because Sparrow's outcomes bring values back too.
The Sparrow side and the structure (warm-up, jobs in flight, 20 warm-up jobs then jobs of 10 one at a
time, percentiles) are bench_runtime.py's. `--executor` is Sparrow's: a Dask worker runs tasks on a
thread of its own process, where Sparrow's process executor adds a worker process behind the node
monitor. Optional (`pip install -e '.[peers]'`); CI does not install Dask.
Script: `python bench/bench_peers.py [--executor process|thread] [--repeat N] [--tasks N] [--jobs N]`
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time

from rich.console import Console
from rich.table import Table

try:
    from bench import bench_runtime as sparrow
    from bench.measure import cpu_counters, steal_percent
except ModuleNotFoundError:  # run as `python bench/bench_peers.py`: bench/ is on sys.path, its parent is not
    import bench_runtime as sparrow
    from measure import cpu_counters, steal_percent

try:
    import distributed
except ImportError:  # an optional extra: main() says how to install it
    distributed = None


async def dask_throughput(address, n_tasks=sparrow.THROUGHPUT_TASKS, job_size=sparrow.THROUGHPUT_JOB_SIZE) -> float:
    """Tasks per second for `n_tasks` no-op tasks in jobs of `job_size`, IN_FLIGHT jobs at a time."""
    async with distributed.Client(address, asynchronous=True) as client:
        await client.gather(client.map(int, range(job_size), pure=False))  # warm up: workers, connections
        start = time.perf_counter()
        pending = []
        for _ in range(n_tasks // job_size):
            pending.append(client.map(int, range(job_size), pure=False))
            if len(pending) >= sparrow.IN_FLIGHT:
                await client.gather(pending.pop(0))
        for job in pending:
            await client.gather(job)
        return (n_tasks // job_size) * job_size / (time.perf_counter() - start)


async def dask_latencies(address, n_jobs=sparrow.LATENCY_JOBS, job_size=sparrow.LATENCY_JOB_SIZE) -> list[float]:
    """Sorted seconds from submission to the last value of one `job_size`-task job, one job at a time."""
    async with distributed.Client(address, asynchronous=True) as client:
        for _ in range(20):  # warm up, as bench_runtime.measure_latencies
            await client.gather(client.map(int, range(job_size), pure=False))
        latencies = []
        for _ in range(n_jobs):
            start = time.perf_counter()
            await client.gather(client.map(int, range(job_size), pure=False))
            latencies.append(time.perf_counter() - start)
        return sorted(latencies)


def dask_run_once(n_tasks: int, n_jobs: int) -> tuple[float, float, float]:
    """(tasks/s, p50 ms, p99 ms) on a fresh Dask cluster: bench_runtime.run_once's figures."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    ) as cluster:
        rate = asyncio.run(dask_throughput(cluster.scheduler_address, n_tasks))
        lat = asyncio.run(dask_latencies(cluster.scheduler_address, n_jobs))
    return rate, 1e3 * sparrow.percentile(lat, 0.5), 1e3 * sparrow.percentile(lat, 0.99)


def best_and_range(runs: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """(best, lowest, highest) of tasks/s (higher is better), p50 and p99 ms (lower is better)."""
    rates, p50s, p99s = zip(*runs, strict=True)
    return [(max(rates), min(rates), max(rates)), (min(p50s), min(p50s), max(p50s)), (min(p99s), min(p99s), max(p99s))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executor", choices=("process", "thread"), default="process", help="Sparrow's executors")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each a fresh Sparrow then a fresh Dask cluster")
    parser.add_argument("--tasks", type=int, default=sparrow.THROUGHPUT_TASKS)
    parser.add_argument("--jobs", type=int, default=sparrow.LATENCY_JOBS, help="10-task jobs for the latency figures")
    args = parser.parse_args()
    if distributed is None:
        parser.exit(2, "bench_peers.py needs Dask distributed: pip install -e '.[peers]'\n")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    load_before, counters_before = os.getloadavg()[0], cpu_counters()
    sparrow_runs, dask_runs = [], []
    for _ in range(args.repeat):
        sparrow_runs.append(sparrow.run_once(args.executor, args.tasks, args.jobs))
        dask_runs.append(dask_run_once(args.tasks, args.jobs))
    load_after, steal = os.getloadavg()[0], steal_percent(counters_before, cpu_counters())

    table = Table()
    for column in ("", "tasks/s", "p50 ms", "p99 ms"):
        table.add_column(column, justify="right" if column else "left")
    spread = args.repeat > 1
    figures = {name: best_and_range(runs) for name, runs in (("Sparrow", sparrow_runs), ("Dask", dask_runs))}
    for name, system_figures in figures.items():
        row = [fmt.format(best) + (f" ({fmt.format(lo)}-{fmt.format(hi)})" if spread else "")
               for fmt, (best, lo, hi) in zip(("{:,.0f}", "{:.2f}", "{:.2f}"), system_figures, strict=True)]  # fmt: skip
        table.add_row(name, *row)
    # Of the bests, and with --repeat the range of the ratios within a round (its two runs minutes apart).
    (s_rate, s_p50, s_p99), (d_rate, d_p50, d_p99) = ([best for best, _, _ in f] for f in figures.values())
    bests = (s_rate / d_rate, d_p50 / s_p50, d_p99 / s_p99)
    pairs = zip(sparrow_runs, dask_runs, strict=True)
    rounds = [(sr / dr, d50 / s50, d99 / s99) for (sr, s50, s99), (dr, d50, d99) in pairs]
    row = [f"{best:.2f}x" + (f" ({min(r):.2f}-{max(r):.2f})" if spread else "")
           for best, r in zip(bests, zip(*rounds, strict=True), strict=True)]  # fmt: skip
    table.add_row("ratio", *row)
    Console().print(table)
    print(f"{args.tasks:,} tasks in jobs of {sparrow.THROUGHPUT_JOB_SIZE}, {sparrow.IN_FLIGHT} in flight; "
          f"{args.jobs} jobs of {sparrow.LATENCY_JOB_SIZE} one at a time; "
          + (f"best of {args.repeat} rounds (range)\n" if spread else "one round\n")
          + "ratio: Sparrow/Dask for tasks/s, Dask/Sparrow for ms (> 1: Sparrow better)\n"
          + f"Sparrow executor={args.executor}; distributed {distributed.__version__}; "
          f"load average {load_before:.2f} -> {load_after:.2f}" + ("" if steal is None else f", steal {steal:.1f}%"))  # fmt: skip


if __name__ == "__main__":
    main()
