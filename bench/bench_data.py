"""Graphs that move data, on Sparrow and on Dask distributed with the same workers, in
one run, alternating the two (Sparrow, distributed, Sparrow, ...) so that the noise of a shared machine
hits both alike. Per graph: the wall time of `dask.compute` on each and the CPU time of each whole process
tree (client, services, workers: a figure the load of a shared machine inflates less), and on Sparrow the
megabytes through the client and through the scheduler (bench/traffic.py: the services' own counters of task
payloads, outcomes and fetched values).

Graphs (`GRAPHS`):
- array: the Dask tests' array graph, `(x + x.T).mean(axis=0)` on 2,000 x 2,000 random numbers in
  chunks of 500 x 500 (bench_dask.py's);
- dataframe: a groupby-sum-mean over 8 partitions of 200,000 rows (bench_dask.py's; the Dask tests' is
  the same graph on 5,000 rows);
- shuffle: 16 input tasks each make 4 MB (500,000 float64), and each of 16 output tasks reads all 16
  inputs (64 MB of inputs per output task, 1 GB read in all) and returns a number.

Sparrow: `LocalCluster(1 scheduler, 4 node monitors x 1 slot, process executors)` and a `DaskScheduler`.
Dask distributed: `LocalCluster(n_workers=4, threads_per_worker=1, processes=True)` and a synchronous
`Client`. Each cluster is fresh per round and warmed up by a small graph; start-up is not timed. A Dask
distributed worker imports numpy when it starts, so every Sparrow worker imports it in the warm-up too
(`warm_up`): otherwise the first graph pays 1-4 s of imports on a loaded machine. Dask
distributed is optional (`pip install -e '.[peers]'`): without it its columns are left out.
Script: `python bench/bench_data.py [--repeat N] [--graphs array,dataframe,shuffle] [--json FILE]
[--transport tcp|unix]` (`--transport`: Sparrow's links, the build's LocalCluster default unless given (Unix
sockets where it can); its data listeners are Unix sockets either way, so that values in memory files pass
between node monitors as the files themselves)
"""

from __future__ import annotations

import json
import os

from rich.console import Console
from rich.table import Table

try:
    from bench import bench_dask, traffic
    from bench.cluster_options import cluster_options
    from bench.measure import cpu_counters, steal_percent
except ModuleNotFoundError:  # run as `python bench/bench_data.py`: bench/ is on sys.path, its parent is not
    import bench_dask
    import traffic
    from cluster_options import cluster_options
    from measure import cpu_counters, steal_percent

dask, distributed = bench_dask.dask, bench_dask.distributed  # None where the optional extras are missing

NODE_MONITORS = 4
SHUFFLE_PARTS, SHUFFLE_BYTES = 16, 4_000_000


def make_block(seed: int, n_bytes: int):
    """A shuffle input: `n_bytes` of float64 random numbers."""
    import numpy as np

    return np.random.default_rng(seed).random(n_bytes // 8)


def combine(part: int, *blocks) -> float:
    """A shuffle output: reads every block (its `part`-th slice of each, and their sizes)."""
    return float(sum(block[part::SHUFFLE_PARTS].sum() + block.size for block in blocks))


def warm_worker(seconds: float) -> tuple[int, int]:
    """A warm-up task: imports numpy (a Dask distributed worker has it from its start) and holds its slot
    a while, so that every worker gets one; its worker (process id, thread id)."""
    import threading
    import time

    import numpy  # noqa: F401  # the import is the warm-up

    time.sleep(seconds)
    return os.getpid(), threading.get_ident()


def warm_up(executor, workers: int, attempts: int = 5) -> None:
    """Run warm_worker until each of the cluster's `workers` worker processes has run one (at most
    `attempts` rounds of 4 tasks per worker)."""
    seen: set[tuple[int, int]] = set()
    for _ in range(attempts):
        seen.update(executor.map(warm_worker, [0.1] * (4 * workers)))
        if len(seen) >= workers:
            return


def shuffle_graph(parts: int = SHUFFLE_PARTS, n_bytes: int = SHUFFLE_BYTES):
    """`parts` inputs of `n_bytes` each; `parts` outputs, each reading all the inputs."""
    blocks = [dask.delayed(make_block, pure=True)(i, n_bytes, dask_key_name=("block", i)) for i in range(parts)]
    return [dask.delayed(combine, pure=True)(j, *blocks, dask_key_name=("combine", j)) for j in range(parts)]


GRAPHS = {"array": bench_dask.array_graph, "dataframe": bench_dask.dataframe_graph, "shuffle": shuffle_graph}


def sparrow_round(
    graphs: dict, node_monitors: int = NODE_MONITORS, executor: str = "process", transport: str | None = None
) -> dict:
    """Graph -> (seconds, tasks, bytes through the client, bytes through the scheduler, CPU seconds of the
    process tree) on a fresh Sparrow cluster of `node_monitors` node monitors x 1 slot (`transport`: the
    LocalCluster's, tcp or unix; None: its default)."""
    results = {}
    links = {} if transport is None else {"transport": transport}
    cluster = bench_dask.LocalCluster(
        node_monitors=node_monitors, slots=1, dashboard=False, **links, **cluster_options(executor)
    )
    with cluster, bench_dask.DaskScheduler(cluster) as sparrow:
        dask.compute(bench_dask.chain_graph(10), scheduler=sparrow)  # warm up: workers, connections
        warm_up(sparrow.executor, node_monitors)  # and numpy in every worker, as distributed's have it
        meter = traffic.of_cluster(cluster, sparrow.executor.client)
        for name, graph in graphs.items():
            tasks = sparrow.tasks
            meter.start()
            seconds, cpu = bench_dask.timed_cpu(graph, sparrow)
            meter.stop()
            results[name] = (seconds, sparrow.tasks - tasks, meter.client_bytes, meter.scheduler_bytes, cpu)
    return results


def main() -> None:
    parser = bench_dask.graph_parser(__doc__, GRAPHS)
    parser.add_argument("--json", metavar="FILE", help="also write every round's figures to FILE")
    parser.add_argument(
        "--transport", choices=("tcp", "unix"), help="Sparrow's links: TCP or Unix sockets (default: the build's)"
    )
    args = parser.parse_args()
    graphs = bench_dask.parsed_graphs(parser, args, GRAPHS)
    names = list(graphs)
    load_before, counters_before = os.getloadavg()[0], cpu_counters()
    sparrow_runs, distributed_runs = [], []
    for _ in range(args.repeat):
        sparrow_runs.append(sparrow_round(graphs, transport=args.transport))
        if distributed is not None:
            distributed_runs.append(bench_dask.distributed_round(graphs, NODE_MONITORS, bench_dask.timed_cpu))
    load_after, steal = os.getloadavg()[0], steal_percent(counters_before, cpu_counters())

    table = Table()
    columns = ["graph", "tasks", "Sparrow s", "Sparrow CPU s", "client MB", "scheduler MB"]
    columns += ["distributed s", "distributed CPU s", "Sparrow / distributed", "CPU ratio"] if distributed_runs else []
    for column in columns:
        table.add_column(column, justify="left" if column == "graph" else "right")
    for name in names:
        best, tasks, through_client, through_scheduler, _ = min(run[name] for run in sparrow_runs)
        cpu = min(run[name][4] for run in sparrow_runs)
        row = [name, f"{tasks:,}", f"{best:.3f}", f"{cpu:.2f}", traffic.megabytes(through_client)]
        row.append(traffic.megabytes(through_scheduler))
        if distributed_runs:
            peer = min(run[name][0] for run in distributed_runs)
            peer_cpu = min(run[name][1] for run in distributed_runs)
            row += [f"{peer:.3f}", f"{peer_cpu:.2f}", f"{best / peer:.2f}x", f"{cpu / peer_cpu:.2f}x"]
        table.add_row(*row)
    Console(width=max(Console().width, 120)).print(table)
    print(
        f"best of {args.repeat} round(s), wall seconds of dask.compute and CPU seconds of the whole process tree "
        "(each column's best); Sparrow / distributed < 1: Sparrow faster\n"
        f"Sparrow 1 scheduler + {NODE_MONITORS} node monitors x 1 slot "
        f"(process executors, {args.transport or 'default links'}); "
        + (f"distributed {distributed.__version__} {NODE_MONITORS} workers x 1 thread; " if distributed_runs else "")
        + f"dask {dask.__version__}; load average {load_before:.2f} -> {load_after:.2f}"
        + ("" if steal is None else f", steal {steal:.1f}%")
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"sparrow": sparrow_runs, "distributed": distributed_runs}, out, indent=1)


if __name__ == "__main__":
    main()
