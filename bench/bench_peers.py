"""Sparrow's runtime figures beside its peers', measured in the same run, alternating the systems
(Sparrow, ProcessPoolExecutor, Dask, Sparrow, ...) so that the noise of a shared machine hits all alike,
and Sparrow's figures can be quoted as ratios:

- no-op tasks: the throughput and latency of bench_runtime.py;
- 10 ms tasks: the saturated rate (jobs of 100 sleeping tasks kept queued; nominal
  2 slots / 10 ms = 200/s), and at 80% load (open loop: jobs of 10 tasks at Poisson arrival times
  whatever the system is doing, the same arrivals for every system) the job response time beyond
  the task's own 10 ms, at p50 and p95, beside its floor: the simulator's omniscient policy (one
  infinitely fast central queue over the same 2 slots, no overhead) replaying the same arrivals with
  the durations Sparrow's tasks measured (a sleep ends a little late).

ProcessPoolExecutor setup: `concurrent.futures.ProcessPoolExecutor(2)`, what a Python user picks
first for parallel tasks on one host: no scheduler, no network, one queue in the submitting
process. A job is `[pool.submit(f, x) for x in ...]`, waited for with `wait`; the load case records
each job's end from its futures' callbacks.

Dask setup: `distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`, its
dashboard on any free port (never a fixed one two runs would share), logs silenced, a fresh cluster
per run: two worker processes of one slot each and a scheduler on loopback TCP, as Sparrow's 2 node
monitors x 1 slot and 1 scheduler (Dask's LocalCluster runs its scheduler on a thread of the calling
process, Sparrow's in a process of its own). It is
driven by an async `distributed.Client`, as Sparrow's side by its async Client (a sync Client adds a
thread hop per call). A job of k tasks is what a Dask user writes for k calls:
`client.gather(client.map(int, range(k), pure=False))`: `int` as Sparrow's no-op, `pure=False` so
that jobs share no keys (no result reuse), `gather` because Sparrow's outcomes bring values back too.
The Sparrow side and the structure (warm-up, jobs in flight, 20 warm-up jobs then jobs of 10 one at a
time, percentiles) are bench_runtime.py's. `--executor` is Sparrow's: a Dask worker runs tasks on a
thread of its own process, where Sparrow's process executor adds a worker process behind the node
monitor. Optional (`pip install -e '.[peers]'`); CI does not install Dask.
The submit loop: `executor.submit(int, i)` called once per task, SparrowExecutor against the
pool's own submit loop (bench/submit_loop.py).
Script: `python bench/bench_peers.py [--executor process|thread] [--pipeline-depth N] [--repeat N]
[--tasks N] [--jobs N] [--load-seconds S] [--submit-tasks N]` (`--load-seconds 0` skips the 10 ms-task case,
`--submit-tasks 0` the submit loop).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, wait
from dataclasses import dataclass
from functools import partial

import numpy as np
from rich.console import Console
from rich.table import Table

try:
    from bench import bench_runtime as sparrow
    from bench.cluster_options import cluster_options
    from bench.measure import cpu_counters, steal_percent
    from bench.open_loop import LoadSpec, run_open_loop
    from bench.submit_loop import SUBMIT_TASKS, pool_submit_loop, sparrow_submit_loop
except ModuleNotFoundError:  # run as `python bench/bench_peers.py`: bench/ is on sys.path, its parent is not
    import bench_runtime as sparrow
    from cluster_options import cluster_options
    from measure import cpu_counters, steal_percent
    from open_loop import LoadSpec, run_open_loop
    from submit_loop import SUBMIT_TASKS, pool_submit_loop, sparrow_submit_loop

try:
    import distributed
except ImportError:  # an optional extra: main() says how to install it
    distributed = None

try:
    import trio

    from sparrow_runtime import Client, LocalCluster
    from sparrow_runtime.demo.task import demo_task
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None

SLOTS = 2  # every system: 2 workers of 1 slot
TASK_S = 0.010  # the load case's task: sleeps 10 ms
LOAD = 0.8
LOAD_JOB_SIZE = 10
SATURATED_TASKS = 1000  # 10 ms tasks for the saturated rate, in jobs of 100
SATURATED_JOB_SIZE = 100
SATURATED_IN_FLIGHT = 4  # jobs queued at once: the slots never wait for the client


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


def pool_run_once(n_tasks: int, n_jobs: int) -> tuple[float, float, float]:
    """(tasks/s, p50 ms, p99 ms) of no-op tasks on a fresh ProcessPoolExecutor(2): bench_runtime's figures."""
    with ProcessPoolExecutor(SLOTS) as pool:
        wait([pool.submit(int, 0) for _ in range(sparrow.THROUGHPUT_JOB_SIZE)])  # start the workers
        job = sparrow.THROUGHPUT_JOB_SIZE
        start = time.perf_counter()
        pending = []
        for _ in range(n_tasks // job):
            pending.append([pool.submit(int, i) for i in range(job)])
            if len(pending) >= sparrow.IN_FLIGHT:
                wait(pending.pop(0))
        for futures in pending:
            wait(futures)
        rate = (n_tasks // job) * job / (time.perf_counter() - start)
        for _ in range(20):  # warm up, as bench_runtime.measure_latencies
            wait([pool.submit(int, i) for i in range(sparrow.LATENCY_JOB_SIZE)])
        latencies = []
        for _ in range(n_jobs):
            start = time.perf_counter()
            wait([pool.submit(int, i) for i in range(sparrow.LATENCY_JOB_SIZE)])
            latencies.append(time.perf_counter() - start)
    latencies.sort()
    return rate, 1e3 * sparrow.percentile(latencies, 0.5), 1e3 * sparrow.percentile(latencies, 0.99)


# -- 10 ms tasks: saturated rate and 80% load ----------------------------------------------------


@dataclass(frozen=True)
class LoadFigures:
    """One system's 10 ms-task figures: saturated tasks/s, and per job of the load case its response
    time (seconds, in arrival order)."""

    rate: float
    response: np.ndarray

    def beyond_task_ms(self, q: float) -> float:
        """The q-th percentile of (response - TASK_S), in ms."""
        return 1e3 * float(np.percentile(self.response - TASK_S, q))


def load_spec(seconds: float = 4.0, seed: int = 0) -> LoadSpec:
    """The load case: Poisson arrivals at LOAD of SLOTS slots, jobs of LOAD_JOB_SIZE x TASK_S."""
    return LoadSpec(
        load=LOAD,
        tasks_per_job=LOAD_JOB_SIZE,
        task_ms=TASK_S * 1e3,
        seconds=seconds,
        node_monitors=SLOTS,
        slots=1,
        seed=seed,
    )


def load_arrivals(seconds: float, seed: int) -> np.ndarray:
    """The load case's job arrival offsets, the same for every system."""
    return load_spec(seconds, seed).workload().arrivals


def sparrow_load(executor: str, arrivals: np.ndarray, pipeline: int | None = None) -> tuple[LoadFigures, LoadFigures]:
    """(Sparrow's figures, the floor's) on a fresh cluster of 2 node monitors x 1 slot (the open-loop
    run and its floor: bench/open_loop.py); `pipeline`: its node monitors' depth (bench_runtime.pipelining)."""
    options = cluster_options(executor, pipeline)
    with LocalCluster(schedulers=1, node_monitors=SLOTS, slots=1, **options) as cluster:
        rate = trio.run(_sparrow_saturated, cluster.schedulers, cluster.secret)
        report = run_open_loop(cluster, load_spec(), arrivals).report
    return LoadFigures(rate, report.response), LoadFigures(SLOTS * report.tasks / report.busy, report.ideal_response)


async def _sparrow_saturated(schedulers, secret) -> float:
    async with Client(schedulers, secret=secret) as client:
        await (await client.submit_job([partial(demo_task, 0.0)] * SLOTS)).wait()
        start = time.perf_counter()
        pending = []
        for _ in range(SATURATED_TASKS // SATURATED_JOB_SIZE):
            pending.append(await client.submit_job([partial(demo_task, TASK_S)] * SATURATED_JOB_SIZE))
            if len(pending) >= SATURATED_IN_FLIGHT:
                await pending.pop(0).wait()
        for job in pending:
            await job.wait()
        return SATURATED_TASKS / (time.perf_counter() - start)


def pool_load(arrivals: np.ndarray) -> LoadFigures:
    """ProcessPoolExecutor(2)'s figures: all the saturated tasks queued at once, then the open loop."""
    with ProcessPoolExecutor(SLOTS) as pool:
        wait([pool.submit(demo_task, 0.0) for _ in range(SLOTS)])
        start = time.perf_counter()
        wait([pool.submit(demo_task, TASK_S) for _ in range(SATURATED_TASKS)])
        rate = SATURATED_TASKS / (time.perf_counter() - start)
        finished = np.full(len(arrivals), np.nan)
        submitted = np.full(len(arrivals), np.nan)
        lock = threading.Lock()
        left = [LOAD_JOB_SIZE] * len(arrivals)

        def on_done(job: int, _future) -> None:
            now = time.monotonic()
            with lock:
                left[job] -= 1
                if left[job] == 0:
                    finished[job] = now

        begin = time.monotonic()
        futures = []
        for job, offset in enumerate(arrivals.tolist()):
            time.sleep(max(0.0, begin + offset - time.monotonic()))
            submitted[job] = time.monotonic()
            for _ in range(LOAD_JOB_SIZE):
                future = pool.submit(demo_task, TASK_S)
                future.add_done_callback(partial(on_done, job))
                futures.append(future)
        for future in futures:
            future.result()  # a task that raised fails the benchmark
    return LoadFigures(rate, finished - submitted)  # the pool's shutdown ran every callback


async def _dask_load(address, arrivals: np.ndarray) -> LoadFigures:
    async with distributed.Client(address, asynchronous=True) as client:
        await client.gather(client.map(demo_task, [0.0] * SLOTS, pure=False))
        start = time.perf_counter()
        pending = []
        for _ in range(SATURATED_TASKS // SATURATED_JOB_SIZE):
            pending.append(client.map(demo_task, [TASK_S] * SATURATED_JOB_SIZE, pure=False))
            if len(pending) >= SATURATED_IN_FLIGHT:
                await client.gather(pending.pop(0))
        for job in pending:
            await client.gather(job)
        rate = SATURATED_TASKS / (time.perf_counter() - start)
        response = np.full(len(arrivals), np.nan)

        async def one(job: int) -> None:
            submitted = time.monotonic()
            await client.gather(client.map(demo_task, [TASK_S] * LOAD_JOB_SIZE, pure=False))
            response[job] = time.monotonic() - submitted

        loop = asyncio.get_running_loop()
        begin = loop.time()
        jobs = []
        for job, offset in enumerate(arrivals.tolist()):
            await asyncio.sleep(max(0.0, begin + offset - loop.time()))
            jobs.append(asyncio.ensure_future(one(job)))
        await asyncio.gather(*jobs)
        return LoadFigures(rate, response)


def dask_load(arrivals: np.ndarray) -> LoadFigures:
    with distributed.LocalCluster(
        n_workers=SLOTS, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
    ) as cluster:
        return asyncio.run(_dask_load(cluster.scheduler_address, arrivals))


def best_and_range(runs: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """(best, lowest, highest) of tasks/s (higher is better), p50 and p99 ms (lower is better)."""
    rates, p50s, p99s = zip(*runs, strict=True)
    return [(max(rates), min(rates), max(rates)), (min(p50s), min(p50s), max(p50s)), (min(p99s), min(p99s), max(p99s))]


def _cells(figures: list[tuple[float, ...]], formats: tuple[str, ...], higher_better: tuple[bool, ...]) -> list[str]:
    """Each column's best over the rounds, with the range when there are several."""
    cells = []
    for column, fmt, higher in zip(zip(*figures, strict=True), formats, higher_better, strict=True):
        best = max(column) if higher else min(column)
        spread = f" ({fmt.format(min(column))}-{fmt.format(max(column))})" if len(column) > 1 else ""
        cells.append(fmt.format(best) + spread)
    return cells


def noop_table(runs: dict[str, list[tuple[float, float, float]]]) -> Table:
    table = Table(title="no-op tasks")
    for column in ("", "tasks/s", "p50 ms", "p99 ms"):
        table.add_column(column, justify="right" if column else "left")
    for name, system_runs in runs.items():
        table.add_row(name, *_cells(system_runs, ("{:,.0f}", "{:.2f}", "{:.2f}"), (True, False, False)))
    # Of the bests, and with several rounds the range of the ratios within a round (its runs minutes apart).
    (s_rate, s_p50, s_p99), (d_rate, d_p50, d_p99) = (
        [best for best, _, _ in best_and_range(runs[name])] for name in ("Sparrow", "Dask")
    )
    bests = (s_rate / d_rate, d_p50 / s_p50, d_p99 / s_p99)
    pairs = zip(runs["Sparrow"], runs["Dask"], strict=True)
    rounds = [(sr / dr, d50 / s50, d99 / s99) for (sr, s50, s99), (dr, d50, d99) in pairs]
    spread = len(rounds) > 1
    row = [
        f"{best:.2f}x" + (f" ({min(r):.2f}-{max(r):.2f})" if spread else "")
        for best, r in zip(bests, zip(*rounds, strict=True), strict=True)
    ]
    table.add_row("Sparrow / Dask", *row)
    return table


def submit_table(runs: dict[str, list[float]]) -> Table:
    table = Table(title="submit loop: one call per task")
    table.add_column("", no_wrap=True)
    table.add_column("tasks/s", justify="right")
    for name, rates in runs.items():
        table.add_row(name, *_cells([(r,) for r in rates], ("{:,.0f}",), (True,)))
    ratios = [ours / pool for ours, pool in zip(runs["Sparrow"], runs["ProcessPoolExecutor(2)"], strict=True)]
    table.add_row("Sparrow / pool", f"{min(ratios):.2f}-{max(ratios):.2f}x" if len(ratios) > 1 else f"{ratios[0]:.2f}x")
    return table


def load_table(runs: dict[str, list[LoadFigures]]) -> Table:
    ms = f"{TASK_S * 1e3:g} ms"
    table = Table(title=f"{ms} tasks on {SLOTS} slots: saturated rate; at {LOAD:.0%} load, job response - {ms}")
    table.add_column("", no_wrap=True)
    for column in (f"tasks/s (of {SLOTS / TASK_S:.0f})", "p50 ms", "p95 ms", "p50 / floor"):
        table.add_column(column, justify="right")
    floors = runs["floor"]
    for name, system_runs in runs.items():
        figures = [
            (f.rate, f.beyond_task_ms(50), f.beyond_task_ms(95), f.beyond_task_ms(50) / floor.beyond_task_ms(50))
            for f, floor in zip(system_runs, floors, strict=True)
        ]
        table.add_row(name, *_cells(figures, ("{:,.0f}", "{:,.0f}", "{:,.0f}", "{:.2f}x"), (True, False, False, False)))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executor", choices=("process", "thread"), default="process", help="Sparrow's executors")
    parser.add_argument(
        "--pipeline",
        action="store_true",
        help="pipelined, 1 deep unless --pipeline-depth says",
    )
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        metavar="N",
        help="Sparrow's node monitors pipeline late binding N deep (sparrow local --pipeline-depth N); 0: off "
        "(--pipeline off); default: the build's (steady, 16 deep)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each with a fresh cluster or pool per system")
    parser.add_argument("--tasks", type=int, default=sparrow.THROUGHPUT_TASKS)
    parser.add_argument("--jobs", type=int, default=sparrow.LATENCY_JOBS, help="10-task jobs for the latency figures")
    parser.add_argument(
        "--load-seconds", type=float, default=15.0, help="seconds of arrivals in the 10 ms-task load case (0: skip it)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the load case's arrivals (every round: the same)")
    parser.add_argument(
        "--submit-tasks",
        type=int,
        default=SUBMIT_TASKS,
        help="no-op tasks of the submit loop, one submit call each (0: skip it)",
    )
    args = parser.parse_args()
    if distributed is None:
        parser.exit(2, "bench_peers.py needs Dask distributed: pip install -e '.[peers]'\n")
    if LocalCluster is None:
        parser.exit(2, "bench_peers.py needs sparrow_runtime: pip install -e .\n")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    if args.pipeline_depth is not None and not 0 <= args.pipeline_depth <= 64:
        parser.error(f"--pipeline-depth must be in [0, 64], got {args.pipeline_depth}")
    pipeline = 1 if args.pipeline and args.pipeline_depth is None else args.pipeline_depth
    if args.pipeline and pipeline == 0:
        parser.error("--pipeline with --pipeline-depth 0 (off)")
    if args.load_seconds < 0:
        parser.error(f"--load-seconds must be >= 0, got {args.load_seconds}")
    load_before, counters_before = os.getloadavg()[0], cpu_counters()
    noop: dict[str, list] = {"Sparrow": [], "ProcessPoolExecutor(2)": [], "Dask": []}
    loaded: dict[str, list] = {"floor": [], "ProcessPoolExecutor(2)": [], "Sparrow": [], "Dask": []}
    submits: dict[str, list[float]] = {"Sparrow": [], "ProcessPoolExecutor(2)": []}
    arrivals = load_arrivals(args.load_seconds, args.seed) if args.load_seconds else None
    for _ in range(args.repeat):
        noop["Sparrow"].append(sparrow.run_once(args.executor, args.tasks, args.jobs, pipeline=pipeline))
        noop["ProcessPoolExecutor(2)"].append(pool_run_once(args.tasks, args.jobs))
        noop["Dask"].append(dask_run_once(args.tasks, args.jobs))
        if args.submit_tasks:
            submits["Sparrow"].append(sparrow_submit_loop(args.executor, args.submit_tasks, pipeline))
            submits["ProcessPoolExecutor(2)"].append(pool_submit_loop(args.submit_tasks))
        if arrivals is not None:
            ours, floor = sparrow_load(args.executor, arrivals, pipeline)
            loaded["Sparrow"].append(ours)
            loaded["floor"].append(floor)
            loaded["ProcessPoolExecutor(2)"].append(pool_load(arrivals))
            loaded["Dask"].append(dask_load(arrivals))
    load_after, steal = os.getloadavg()[0], steal_percent(counters_before, cpu_counters())

    console = Console(width=None if os.isatty(1) else 120)  # a log keeps each table's rows on one line
    console.print(noop_table(noop))
    console.print(
        f"{args.tasks:,} tasks in jobs of {sparrow.THROUGHPUT_JOB_SIZE}, {sparrow.IN_FLIGHT} in flight; "
        f"{args.jobs} jobs of {sparrow.LATENCY_JOB_SIZE} one at a time; "
        + (f"best of {args.repeat} rounds (range)" if args.repeat > 1 else "one round")
        + "; Sparrow / Dask: tasks/s ratio, and Dask's ms / Sparrow's (> 1: Sparrow better)",
        highlight=False,
    )
    if args.submit_tasks:
        console.print(submit_table(submits))
        console.print(
            f"{args.submit_tasks:,} no-op tasks, `executor.submit(int, i)` one call per task, then waiting "
            "for them all (SparrowExecutor: what reaches its trio thread together is one job)",
            highlight=False,
        )
    if arrivals is not None:
        console.print(load_table(loaded))
        console.print(
            f"saturated: {SATURATED_TASKS} tasks in jobs of {SATURATED_JOB_SIZE} kept queued; load: "
            f"{len(arrivals)} jobs of {LOAD_JOB_SIZE} in {args.load_seconds:g} s (Poisson, seed {args.seed}, "
            "the same for every system and round); floor: the omniscient replay of the arrivals with the "
            "durations Sparrow's tasks measured, its tasks/s the slots over their mean duration",
            highlight=False,
        )
    console.print(
        f"Sparrow executor={args.executor}"
        + ("" if pipeline is None else f"; pipelined {pipeline} deep" if pipeline else "; pipelining off")
        + f"; distributed {distributed.__version__}; "
        f"load average {load_before:.2f} -> {load_after:.2f}" + ("" if steal is None else f", steal {steal:.1f}%"),
        highlight=False,
    )


if __name__ == "__main__":
    main()
