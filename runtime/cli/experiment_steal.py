"""`sparrow experiment steal`: the stealing runtime experiment, short and long jobs mixed at high load on a
local cluster, work stealing off and on over the same arrivals, against the simulator, in OUT/steal.md
(sparrow_experiments.steal)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import trio
from rich.console import Console

from sparrow_experiments import steal as steal_report
from sparrow_experiments.machine import MachineWatch, this_machine
from sparrow_experiments.placement import placement_logs, run_placement
from sparrow_experiments.run import run_queries
from sparrow_experiments.steal_timing import node_metrics, read_steal_timing

from ..client.core import Client
from ..services.logsetup import setup_logging
from .common import CommandError
from .config import number
from .demo_view import DemoProgress
from .experiment_flags import POSITIVE_INT, POSITIVE_NUMBER, add_cluster_flags, experiment_cluster, flag
from .help_format import DefaultsShown
from .output import output_folder


def add_steal_parser(experiments: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = experiments.add_parser(
        "steal",
        help="short and long jobs mixed at high load, work stealing off and on, against the simulator",
        description="The stealing runtime experiment: jobs of 2 tasks, 12% of them long (500 ms tasks), the others "
        "short (20 ms tasks; --width, --long-fraction and --long-ms change the mix), arriving at --load of the slots; "
        "each seed's arrivals run twice on a fresh local cluster, "
        "with work stealing off and on (alternating which goes first), and the simulator replays each run with "
        "its measured hops and its schedulers' own probe placement, each job's probes in the order its node monitors "
        "asked for it (sparrow and sparrow_steal; SPARROW_PLACEMENT_LOG is set for the cluster). Writes OUT/steal.md, "
        "with each run's error also in points of the percentile (the short p50 lies between the short jobs blocked "
        "behind a long task and the others, where a point is often tens of ms). About 2 x (--seconds + 30 s) per "
        "seed. `--out docs/paper` regenerates the committed copy.",
        formatter_class=DefaultsShown,
    )
    p.add_argument("--runs", metavar="N", type=POSITIVE_INT, default=2, help="seeds, each run with stealing off and on")
    p.add_argument(
        "--seconds", metavar="S", type=POSITIVE_NUMBER, default=90.0, help="seconds during which jobs arrive, per run"
    )
    # tasks only sleep: threads run them as well as processes, and a 2-core host keeps up with 16 node monitors at
    # 4x the durations (at 1x the runtime saturated the host's CPUs, with or without stealing: docs/runtime.md)
    add_cluster_flags(
        p, arrive="jobs", load=0.85, schedulers=1, node_monitors=16, slots=1, time_scale=4.0, executor="thread"
    )
    p.add_argument(
        "--long-fraction",
        metavar="FRACTION",
        type=flag(number(0.0, 1.0)),
        default=steal_report.LONG_FRACTION,
        help="share of the jobs that are long (another mix: `sparrow experiment steal-study` compares some)",
    )
    p.add_argument(
        "--long-ms", metavar="MS", type=POSITIVE_NUMBER, default=steal_report.LONG_MS, help="a long job's mean task"
    )
    p.add_argument("--width", metavar="N", type=POSITIVE_INT, default=steal_report.WIDTH, help="tasks per job")
    p.add_argument(
        "--out", metavar="DIR", type=Path, help="folder for steal.md, created if missing (default: a new folder here)"
    )
    p.set_defaults(func=run_steal)


def run_steal(args: argparse.Namespace) -> int:
    setup_logging(args.log_level)
    slots = args.node_monitors * args.slots
    seeds = [args.seed + i for i in range(args.runs)]
    mix = steal_report.Mix(long_ms=args.long_ms, long_fraction=args.long_fraction, width=args.width)
    try:
        workloads = {
            seed: steal_report.make_mixed(
                load=args.load, seconds=args.seconds, slots=slots, seed=seed, time_scale=args.time_scale, mix=mix
            )
            for seed in seeds
        }
        folder, _ = output_folder(args.out, "sparrow-steal")
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    console = Console(highlight=False)
    runs, notes = [], []
    for i, seed in enumerate(seeds):
        workload, long = workloads[seed]
        for steal in (False, True) if i % 2 == 0 else (True, False):
            console.print(
                f"seed {seed}, stealing {'on' if steal else 'off'}: {len(workload.queries):,} jobs "
                f"({int(long.sum())} long, {workload.n_tasks:,} tasks, offered load {workload.offered_load:.0%}) on "
                f"{args.schedulers} schedulers, {args.node_monitors} node monitors x {args.slots} slots"
            )
            watch = MachineWatch()
            with placement_logs() as placed, node_metrics():
                with (
                    experiment_cluster(args, steal=steal) as cluster,
                    DemoProgress(console) as progress,
                ):
                    records = trio.run(
                        partial(run_queries, cluster.schedulers, cluster.secret, workload, on_progress=progress.update)
                    )
                    stolen = trio.run(_stolen_tasks, cluster.schedulers, cluster.secret)
                    timing = read_steal_timing(cluster.metrics_urls.values()) if steal else None
                try:  # the schedulers have stopped: their logs are whole
                    placement = run_placement(
                        records, placed, cluster.scheduler_ids, cluster.node_ids, slots=args.slots
                    )
                except (OSError, ValueError) as exc:
                    raise CommandError(f"seed {seed}: the schedulers' placement logs: {exc}") from None
            if placement is None:
                console.print(f"seed {seed}: a job is missing from the placement logs; the model draws the placement")
            note = watch.note()
            notes.append(
                f"seed {seed} {'on' if steal else 'off'}: load {note.load_before:.1f}-{note.load_after:.1f}"
                + ("" if note.steal is None else f", CPU steal {note.steal:.1f}%")
            )
            figures = steal_report.steal_figures(
                records,
                long,
                steal=steal,
                seed=seed,
                node_monitors=args.node_monitors,
                slots=args.slots,
                schedulers=args.schedulers,
                stolen=stolen,
                timing=timing,
                placement=placement,
            )
            if figures.failed:
                raise CommandError(
                    f"seed {seed}: {figures.failed} tasks failed; the figures would not describe the load"
                )
            runs.append(figures)
    command = " ".join(["sparrow", *map(shlex.quote, sys.argv[1:])]) if sys.argv[1:2] == ["experiment"] else ""
    setup = (
        f"{args.schedulers} scheduler(s), {args.node_monitors} node monitors x {args.slots} slots, "
        f"{args.executor} executors, load {args.load:g}, {args.seconds:g} s of arrivals per run, "
        f"time scale {args.time_scale:g}, seeds {', '.join(map(str, seeds))}; machine: {this_machine()}."
    )
    page = folder / "steal.md"
    page.write_text(
        steal_report.render(runs, command=command or "sparrow experiment steal", setup=setup, notes=notes, mix=mix)
    )
    console.print(steal_report.table(runs), markup=False)
    for line in steal_report.verdicts(runs):
        console.print(line, markup=False)
    console.print(f"wrote {page}")
    return 0


async def _stolen_tasks(schedulers: Sequence[str], secret: str | bytes) -> int:
    """Tasks the cluster's schedulers launched for stolen reservations (their get_task_stolen counters less
    the NoTask answers are not told apart: this counts the stolen requests)."""
    total = 0
    for address in schedulers:
        async with Client([address], secret=secret) as client:
            total += (await client.status()).counters.get("get_task_stolen", 0)
    return total
