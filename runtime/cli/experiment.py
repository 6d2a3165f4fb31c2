"""`sparrow experiment cluster`: the paper's cluster experiment on a local cluster, run several times,
reported against the ideal and the simulator in OUT/cluster.md with its figure (sparrow_experiments).
`sparrow experiment steal` is experiment_steal.py."""

from __future__ import annotations

import argparse
import shlex
import sys
from functools import partial
from pathlib import Path

import trio
from rich.console import Console
from rich.table import Table

from sparrow_experiments.document import Setup, verdicts, write
from sparrow_experiments.machine import MachineWatch, this_machine
from sparrow_experiments.queries import make_queries
from sparrow_experiments.report import RESPONSE_PERCENTILES, percentiles, run_figures, summarise
from sparrow_experiments.run import run_queries

from ..services.logsetup import setup_logging
from .common import CommandError
from .demo_view import DemoProgress
from .experiment_flags import POSITIVE_INT, POSITIVE_NUMBER, add_cluster_flags, experiment_cluster
from .experiment_steal import add_steal_parser
from .experiment_steal_study import add_steal_study_parser
from .help_format import DefaultsShown
from .output import output_folder


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="run one of the paper's experiments on this host and write its report",
        description="Experiments that reproduce the paper's results on the runtime.",
    )
    experiments = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    p = experiments.add_parser(
        "cluster",
        help="TPC-H-like queries on a local cluster, against the ideal and the simulator",
        description="The paper's cluster experiment at the size of this machine: TPC-H-like queries (DAGs of "
        "stages, each stage one job) submitted by one client per scheduler at --load of the slots, --runs "
        "times on a fresh local cluster. Reports each query's response time against an ideal scheduler fed the "
        "same arrivals and against the simulator given the run's measured delays, and each task's queueing "
        "delay split into its network/late-binding and waiting-for-a-slot parts; writes OUT/cluster.md and "
        "OUT/cluster.png. About 1 minute per run with the defaults. Its flags have no environment variables.",
        formatter_class=DefaultsShown,
    )
    p.add_argument(
        "--runs", metavar="N", type=POSITIVE_INT, default=3, help="runs, each on a fresh cluster with its own seed"
    )
    p.add_argument(
        "--seconds",
        metavar="S",
        type=POSITIVE_NUMBER,
        default=40.0,
        help="seconds during which queries arrive, per run",
    )
    add_cluster_flags(p, arrive="queries", load=0.8, schedulers=4, node_monitors=8, slots=4)
    p.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help="folder for cluster.md and cluster.png, created if missing "
        "(default: a new folder sparrow-cluster-DATE-TIME here; `--out docs/paper` regenerates the committed copy)",
    )
    p.set_defaults(func=run)
    add_steal_parser(experiments)
    add_steal_study_parser(experiments)


def run(args: argparse.Namespace) -> int:
    try:
        from sparrow_core.sim.plot import require_matplotlib

        require_matplotlib()
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    setup_logging(args.log_level)
    slots = args.node_monitors * args.slots
    seeds = tuple(args.seed + i for i in range(args.runs))
    try:
        workloads = [
            make_queries(load=args.load, seconds=args.seconds, slots=slots, seed=seed, time_scale=args.time_scale)
            for seed in seeds
        ]
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    try:
        folder, made = output_folder(args.out, "sparrow-cluster")
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    try:
        return _run(args, workloads, seeds, folder)
    finally:
        if made and not any(folder.iterdir()):  # a run that failed leaves no empty folder behind
            folder.rmdir()


def _run(args: argparse.Namespace, workloads: list, seeds: tuple[int, ...], folder: Path) -> int:
    console = Console(highlight=False)
    runs, notes = [], []
    for i, workload in enumerate(workloads, start=1):
        console.print(
            f"run {i} of {args.runs}: {len(workload.queries):,} queries ({workload.n_stages:,} stages, "
            f"{workload.n_tasks:,} tasks, offered load {workload.offered_load:.0%}) on {args.schedulers} schedulers, "
            f"{args.node_monitors} node monitors x {args.slots} slots"
        )
        watch = MachineWatch()
        with (
            experiment_cluster(args) as cluster,
            DemoProgress(console) as progress,
        ):
            records = trio.run(
                partial(run_queries, cluster.schedulers, cluster.secret, workload, on_progress=progress.update)
            )
        notes.append(watch.note())
        figures = run_figures(records, node_monitors=args.node_monitors, slots=args.slots, schedulers=args.schedulers)
        if figures.failed:
            raise CommandError(f"run {i}: {figures.failed} tasks failed; the figures would not describe the load")
        runs.append(figures)
    setup = Setup(
        command=" ".join(["sparrow", *map(shlex.quote, sys.argv[1:])])
        if sys.argv[1:2] == ["experiment"]
        else "sparrow experiment cluster",
        schedulers=args.schedulers,
        node_monitors=args.node_monitors,
        slots=args.slots,
        load=args.load,
        seconds=args.seconds,
        time_scale=args.time_scale,
        executor=args.executor,
        seeds=seeds,
        machine=this_machine(),
    )
    _print_summary(console, runs)
    page, figure = write(runs, notes, setup, folder)
    console.print(f"wrote {page} and {figure}")
    return 0


def _print_summary(console: Console, runs: list) -> None:
    title = "query response time" + (f", median of {len(runs)} runs (range)" if len(runs) > 1 else "")
    table = Table(title=title, title_justify="left")
    for column in ("", "sparrow ms", "ideal ms", "simulated ms"):
        table.add_column(column, justify="right" if column else "left")

    def cell(name: str, q: float) -> str:
        s = summarise(runs, lambda r: percentiles(getattr(r, name), [q])[0])
        return f"{s.median * 1e3:,.0f} ({s.low * 1e3:,.0f}-{s.high * 1e3:,.0f})"

    for q in RESPONSE_PERCENTILES:
        table.add_row(f"p{q}", cell("response", q), cell("ideal_response", q), cell("simulated_response", q))
    console.print(table)
    for line in verdicts(runs):
        console.print(line, markup=False)
