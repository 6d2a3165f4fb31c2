"""Dask graphs on Sparrow beside Dask's own schedulers, in one run: wall time of `dask.compute` for the
same graphs on Sparrow (sparrow_runtime.dask), on Dask distributed and on Dask's default local
scheduler, alternating the three (Sparrow, distributed, local, Sparrow, ...) so that the noise of a
shared machine hits all alike, and Sparrow's figures can be quoted as speed-ups.

Graphs (`GRAPHS`):
- wide: 10,000 no-op tasks in 100 stages of 100; each stage's tasks take the result of a no-op
  barrier task that takes all of the previous stage's (Spark's stage boundary): 10,100 tasks.
- chain: 1,000 no-op tasks, each taking the previous one's result.
- array: `(x + x.T).mean(axis=0)` on 2,000 x 2,000 random numbers in chunks of 500 x 500.
- dataframe: a groupby-sum-mean over 8 partitions of 200,000 rows.
No-op tasks are builtins (`int`, `sum`), as bench_peers.py's, so no system pays for pickling a function.

Sparrow: `LocalCluster(1 scheduler, 2 node monitors x 1 slot)` and a `DaskScheduler` on it; its waves
(jobs sent) are printed with each graph (tasks / waves: how well the readiness of a stage was batched),
the CPU time of this process (the client: Dask's graph walk, pickling, outcomes), and the megabytes
through the client and through the scheduler (bench/traffic.py: the services' own byte counters of task
payloads and outcomes, and the client's uploads, per graph: the dataframe graph's 3.3 MB through the client
are its `from_pandas` partitions, scattered once straight to the node monitors). The row "wide
without Dask" sends the wide graph's 200 waves with `SparrowExecutor.submit_many`, one after the
other, on the same cluster: what the cluster takes for those waves when no graph is walked.
Dask distributed: `LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`, a synchronous
`Client`, `dask.compute(..., scheduler=client)`. Local: `dask.compute(...)` with the collection's default
scheduler (threads for all four: 2 threads on this machine). Each cluster is fresh per round and warmed
up by a small graph first; cluster start-up is not timed. Dask distributed is optional (`pip install -e
'.[peers]'`): without it its column is left out.
Script: `python bench/bench_dask.py [--executor process|thread] [--repeat N] [--graphs wide,chain,...]`
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import os
import time

from rich.console import Console
from rich.table import Table

try:
    from bench import traffic
    from bench.bench_vs_pool import tree_cpu_seconds
    from bench.cluster_options import cluster_options
    from bench.measure import cpu_counters, steal_percent
except ModuleNotFoundError:  # run as `python bench/bench_dask.py`: bench/ is on sys.path, its parent is not
    import traffic
    from bench_vs_pool import tree_cpu_seconds
    from cluster_options import cluster_options
    from measure import cpu_counters, steal_percent

try:
    import dask
    from dask.delayed import Delayed

    from sparrow_runtime import LocalCluster
    from sparrow_runtime.dask import DaskScheduler
except ImportError:  # an optional extra: main() says how to install it
    dask = None

try:
    import distributed
except ImportError:
    distributed = None

WIDE_STAGES, WIDE_WIDTH = 100, 100
CHAIN_LENGTH = 1000
ARRAY_SIDE, ARRAY_CHUNK = 2000, 500
FRAME_ROWS, FRAME_PARTITIONS = 200_000, 8


def wide_graph(stages: int = WIDE_STAGES, width: int = WIDE_WIDTH):
    """`stages` stages of `width` no-op tasks, each stage after a barrier task on the previous one."""
    dsk: dict = {}
    barrier = None
    for s in range(stages):
        for i in range(width):
            dsk[("wide", s, i)] = (int,) if barrier is None else (int, barrier)
        barrier = ("barrier", s)
        dsk[barrier] = (sum, [("wide", s, i) for i in range(width)])
    return Delayed(barrier, dsk)


def chain_graph(length: int = CHAIN_LENGTH):
    """`length` no-op tasks, each taking the previous one's result."""
    dsk: dict = {("chain", 0): (int,)}
    for i in range(1, length):
        dsk[("chain", i)] = (int, ("chain", i - 1))
    return Delayed(("chain", length - 1), dsk)


def array_graph(side: int = ARRAY_SIDE, chunk: int = ARRAY_CHUNK):
    import dask.array as da

    x = da.random.RandomState(0).random_sample((side, side), chunks=(chunk, chunk))
    return (x + x.T).mean(axis=0)


def dataframe_graph(rows: int = FRAME_ROWS, partitions: int = FRAME_PARTITIONS):
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"key": rng.integers(0, 100, rows), "value": rng.random(rows)})
    return dd.from_pandas(frame, npartitions=partitions).groupby("key").value.agg(["sum", "mean"])


GRAPHS = {"wide": wide_graph, "chain": chain_graph, "array": array_graph, "dataframe": dataframe_graph}
WITHOUT_DASK = "wide without Dask"


def timed(graph, scheduler) -> float:
    start = time.perf_counter()
    dask.compute(graph, scheduler=scheduler)
    return time.perf_counter() - start


def timed_cpu(graph, scheduler) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and all its descendants: the cluster it started) of
    `dask.compute`; CPU is less inflated than wall time by the load of a shared machine."""
    cpu = tree_cpu_seconds()
    seconds = timed(graph, scheduler)
    return seconds, tree_cpu_seconds() - cpu


def waves_without_dask(executor, stages: int = WIDE_STAGES, width: int = WIDE_WIDTH) -> float:
    """Seconds for the wide graph's waves sent one after the other with submit_many, no graph walked."""
    start = time.perf_counter()
    for _ in range(stages):
        concurrent.futures.wait(executor.submit_many([(int, (), {})] * width))
        executor.submit(sum, [0] * width).result()
    return time.perf_counter() - start


def sparrow_round(
    graphs: dict, executor: str, wide_shape: tuple[int, int] = (WIDE_STAGES, WIDE_WIDTH)
) -> dict[str, tuple[float, int, int, float, int, int]]:
    """Graph -> (seconds, waves, tasks, client CPU seconds, bytes through the client, bytes through the
    scheduler) on a fresh Sparrow cluster; with a "wide" graph of `wide_shape` (stages, width), also its
    waves without Dask."""
    results = {}
    with (
        LocalCluster(schedulers=1, node_monitors=2, slots=1, dashboard=False, **cluster_options(executor)) as cluster,
        DaskScheduler(cluster) as sparrow,
    ):
        dask.compute(chain_graph(10), scheduler=sparrow)  # warm up: workers, connections
        meter = traffic.of_cluster(cluster, sparrow.executor.client)
        for name, graph in graphs.items():
            waves, tasks = sparrow.waves, sparrow.tasks
            meter.start()
            cpu = time.process_time()
            seconds = timed(graph, sparrow)
            cpu = time.process_time() - cpu
            meter.stop()
            results[name] = (
                seconds,
                sparrow.waves - waves,
                sparrow.tasks - tasks,
                cpu,
                meter.client_bytes,
                meter.scheduler_bytes,
            )
        if "wide" in graphs:
            meter.start()
            cpu = time.process_time()
            seconds = waves_without_dask(sparrow.executor, *wide_shape)
            cpu = time.process_time() - cpu
            meter.stop()
            stages, width = wide_shape
            results[WITHOUT_DASK] = (
                seconds,
                2 * stages,
                stages * (width + 1),
                cpu,
                meter.client_bytes,
                meter.scheduler_bytes,
            )
    return results


def distributed_round(graphs: dict, workers: int = 2, measure=timed) -> dict:
    """Graph -> seconds (`measure(graph, client)`) on a fresh Dask distributed cluster of `workers` worker
    processes x 1 thread."""
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dask.compute(chain_graph(10), scheduler=client)
        return {name: measure(graph, client) for name, graph in graphs.items()}


def local_round(graphs: dict) -> dict[str, float]:
    """Graph -> seconds on Dask's default scheduler for the collection."""
    return {name: timed(graph, None) for name, graph in graphs.items()}


def graph_parser(description: str, builders: dict) -> argparse.ArgumentParser:
    """The command line of a graph benchmark: --repeat and --graphs (of `builders`)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each on fresh clusters; the best is shown")
    parser.add_argument("--graphs", default=",".join(builders), help=f"comma-separated, of {', '.join(builders)}")
    return parser


def parsed_graphs(parser: argparse.ArgumentParser, args: argparse.Namespace, builders: dict) -> dict:
    """The graphs that `args` (of graph_parser) names, built; exits with a message for bad arguments."""
    if dask is None:
        parser.exit(2, f"{parser.prog} needs Dask: pip install -e '.[dask]' (and '.[peers]' for Dask distributed)\n")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    names = [n for n in args.graphs.split(",") if n]
    unknown = sorted(set(names) - set(builders))
    if unknown:
        parser.error(f"unknown graphs {unknown}: choose among {', '.join(builders)}")
    return {name: builders[name]() for name in names}


def main() -> None:
    parser = graph_parser(__doc__, GRAPHS)
    parser.add_argument("--executor", choices=("process", "thread"), default="process", help="Sparrow's executors")
    args = parser.parse_args()
    graphs = parsed_graphs(parser, args, GRAPHS)
    names = list(graphs)
    load_before, counters_before = os.getloadavg()[0], cpu_counters()
    sparrow_runs, distributed_runs, local_runs = [], [], []
    for _ in range(args.repeat):
        sparrow_runs.append(sparrow_round(graphs, args.executor))
        if distributed is not None:
            distributed_runs.append(distributed_round(graphs))
        local_runs.append(local_round(graphs))
    load_after, steal = os.getloadavg()[0], steal_percent(counters_before, cpu_counters())

    table = Table()
    columns = ["graph", "tasks", "tasks/wave", "Sparrow s", "client CPU s", "client MB", "scheduler MB"]
    columns += ["distributed s", "vs distributed"] if distributed_runs else []
    columns += ["local s", "vs local"]
    for column in columns:
        table.add_column(column, justify="left" if column == "graph" else "right")
    for name in names + ([WITHOUT_DASK] if "wide" in names else []):
        best = min(run[name][0] for run in sparrow_runs)
        _, waves, tasks, cpu, through_client, through_scheduler = min(run[name] for run in sparrow_runs)
        row = [name, f"{tasks:,}", f"{tasks / max(waves, 1):.1f}", f"{best:.3f}", f"{cpu:.3f}"]
        row += [traffic.megabytes(through_client), traffic.megabytes(through_scheduler)]
        if name == WITHOUT_DASK:
            table.add_row(*row)
            continue
        if distributed_runs:
            peer = min(run[name] for run in distributed_runs)
            row += [f"{peer:.3f}", f"{peer / best:.2f}x"]
        local = min(run[name] for run in local_runs)
        row += [f"{local:.3f}", f"{local / best:.2f}x"]
        table.add_row(*row)
    Console(width=max(Console().width, 140)).print(table)
    print(
        f"best of {args.repeat} round(s), wall seconds of dask.compute; vs: the other's seconds / Sparrow's "
        f"(> 1: Sparrow faster)\nSparrow executor={args.executor}, 1 scheduler + 2 node monitors x 1 slot; "
        + (f"distributed {distributed.__version__} 2 workers x 1 thread; " if distributed_runs else "")
        + f"dask {dask.__version__}; load average {load_before:.2f} -> {load_after:.2f}"
        + ("" if steal is None else f", steal {steal:.1f}%")
    )


if __name__ == "__main__":
    main()
