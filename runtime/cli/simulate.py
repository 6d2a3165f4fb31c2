"""`sparrow simulate`: a sweep of the simulator (policies x loads) with a progress bar, a
table, CSV/JSON output and paper-style plots; `--paper` runs the paper's simulation and writes
its files to a folder of their own (never over tracked files unless `--out` says so)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparrow_core import QUEUE_POLICIES
from sparrow_core.sim import DURATIONS, PLACEMENT_POLICIES, SimConfig, high_load
from sparrow_core.sim.plot import plot_sweep, require_matplotlib
from sparrow_core.sim.sweep import COLUMNS, Sweep, run_sweep

from .help_format import DefaultsShown
from .output import output_folder

if TYPE_CHECKING:
    from rich.console import Console

PAPER_LOADS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
# The policies of the paper's figures and the high-load table (docs/paper/); the pipelined
# variants are compared in docs/simulator.md instead, at the runtime's round trip and short tasks.
PAPER_POLICIES = ("random", "per_task", "batch", "sparrow", "sparrow_steal", "omniscient")
# The console shows these; the files get every column of sweep.COLUMNS.
SHOWN = ("policy", "load", "mean", "p50", "p99", "vs_omniscient", "no_queueing", "tasks_per_second")
# The paper's files hold every column but the simulator's speed, which changes with the machine and
# every run: the same seed and kernels give the same files (docs/paper/ stays as committed).
PAPER_COLUMNS = tuple(c for c in COLUMNS if c != "tasks_per_second")
PAPER_FILES = {
    "results.csv": "every point, every column but the machine-dependent speed",
    "table.md": "the same as a Markdown table",
    "figure.png": "mean response / omniscient's against load; response-time CDFs at load 0.8",
    "high_load.csv": "high load (per_job, bimodal, exponential at 0.8-0.95): p50 and p99 over omniscient's",
    "high_load.md": "the same as a Markdown table",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate scheduling policies on a large cluster",
        description="Simulate Sparrow and its alternatives: one run per (policy, load). A simulation is "
        "described by its command line alone: these flags have no environment variables or config-file keys.",
        formatter_class=DefaultsShown,
    )
    p.add_argument(
        "--policies", default=",".join(PLACEMENT_POLICIES), help=f"comma list of {', '.join(PLACEMENT_POLICIES)}"
    )
    p.add_argument("--loads", default="0.5,0.8", help="comma list of loads in (0, 1)")
    p.add_argument("--workers", type=int, default=1000, help="number of workers")
    p.add_argument("--slots", type=int, default=1, help="slots per worker")
    p.add_argument("--tasks-per-job", type=int, default=100, help="tasks in each job")
    p.add_argument("--jobs", type=int, help="jobs per run (default: 1000; with --paper: 10000)")
    p.add_argument("--duration", choices=DURATIONS, default="exponential", help="task duration distribution")
    p.add_argument("--mean-duration", type=float, default=0.1, help="mean task duration, seconds")
    p.add_argument("--network-delay", type=float, default=0.0005, help="one-way message delay, seconds")
    p.add_argument("--probe-ratio", type=float, default=2.0, help="probes per task (batch sampling)")
    p.add_argument("--schedulers", type=int, default=1, help="schedulers the jobs are spread over, round-robin")
    p.add_argument("--no-cancellation", action="store_true", help="sparrow: keep leftover reservations")
    p.add_argument("--steal-victims", type=int, default=8, help="sparrow_steal: peers an idle worker asks")
    p.add_argument("--steal-max-take", type=int, default=1, help="sparrow_steal: reservations moved per steal at most")
    p.add_argument(
        "--steal-min-blocked",
        type=float,
        default=0.0,
        help="sparrow_steal: seconds a peer's slot must have been held for it to be stolen from",
    )
    p.add_argument(
        "--pipeline-after",
        type=float,
        default=0.0,
        help="sparrow_pipelined, sparrow_steal_pipelined (pipelined late binding: a busy worker asks for the next "
        "task of a slot ahead, which hides the scheduler round trip but binds the task to a busy slot): a slot asks "
        "once its task has run this many times the worker's recent median run time (0: as soon as it starts). "
        "Measured at a 0.3 ms round trip and 5 ms tasks it loses to plain sparrow except at high load with bimodal "
        "tasks (p50 only); it pays when the round trip is a large part of a task (docs/simulator.md)",
    )
    p.add_argument(
        "--pipeline-depth",
        type=int,
        default=1,
        help="sparrow_pipelined, sparrow_steal_pipelined: requests asked ahead per slot at most, 1-64 (the runtime's "
        "--pipeline-depth rule: deeper than 1 only while the worker's last 8 tasks ran under 5 ms at the median, and "
        "for at most half of what the worker holds of a job)",
    )
    p.add_argument("--queue-policy", choices=QUEUE_POLICIES, default="fifo", help="the workers' reservation queues")
    p.add_argument("--trace", type=Path, help="replay a trace (lines: arrival_time n_tasks duration...)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (the same seed, the same results)")
    p.add_argument("--warmup", type=float, default=0.1, help="fraction of the first jobs left out of the stats")
    p.add_argument("--output", "-o", type=Path, help="write the rows to FILE.csv or FILE.json")
    p.add_argument("--plot", type=Path, help="draw the figures to FILE (.png, .svg, .pdf)")
    p.add_argument(
        "--paper",
        action="store_true",
        help="the paper's simulation: 10,000 workers, 100-task jobs, exponential durations, loads 0.1-0.9, "
        f"policies {', '.join(PAPER_POLICIES)}; then the high-load workloads (per_job and bimodal durations, "
        "loads 0.8-0.95); writes "
        "results.csv, table.md, figure.png, high_load.csv and high_load.md to --out",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="with --paper: the folder for its files, created if missing (default: a new folder "
        "sparrow-paper-DATE-TIME in the current directory); `--out docs/paper` regenerates the committed copy",
    )
    p.set_defaults(func=run)


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--{name} must be a comma-separated list of numbers, got {text!r}") from None


def _policies(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in PLACEMENT_POLICIES]
    if unknown or not names:
        expected = ", ".join(PLACEMENT_POLICIES)
        raise ValueError(f"--policies: unknown {', '.join(unknown) or '(none given)'}; expected {expected}")
    return names


def _config(args: argparse.Namespace) -> SimConfig:
    return SimConfig(
        n_workers=args.workers,
        slots=args.slots,
        tasks_per_job=args.tasks_per_job,
        n_jobs=1000 if args.jobs is None else args.jobs,
        duration=args.duration,
        mean_duration=args.mean_duration,
        network_delay=args.network_delay,
        probe_ratio=args.probe_ratio,
        n_schedulers=args.schedulers,
        cancellation=not args.no_cancellation,
        steal_victims=args.steal_victims,
        steal_max_take=args.steal_max_take,
        steal_min_blocked=args.steal_min_blocked,
        pipeline_after=args.pipeline_after,
        pipeline_depth=args.pipeline_depth,
        queue_policy=args.queue_policy,
        trace=args.trace,
        seed=args.seed,
        keep_task_waits=True,
    )


def _paper(args: argparse.Namespace) -> tuple[SimConfig, list[str], list[float]]:
    base = SimConfig(
        n_workers=10_000,
        slots=1,
        tasks_per_job=100,
        n_jobs=args.jobs or 10_000,
        duration="exponential",
        mean_duration=0.1,
        network_delay=0.0005,
        probe_ratio=2.0,
        seed=args.seed,
    )
    return base, list(PAPER_POLICIES), list(PAPER_LOADS)


def _format(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return "-"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.3e}"


def _console() -> Console:
    """A rich Console for stdout; piped or redirected, as wide as the table needs (rich's default
    there is 80 columns, which wraps and cuts the table) unless COLUMNS says otherwise."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=100_000)
    return console


def _print_table(sweep: Sweep) -> None:
    from rich.table import Table

    table = Table(title="sparrow simulate (response times in seconds)")
    for column in SHOWN:
        if column == "policy":
            table.add_column(column, no_wrap=True, min_width=10)
        else:
            table.add_column(column, justify="right")
    for row in sweep.rows:
        table.add_row(*(_format(row[c]) for c in SHOWN))
    _console().print(table)


def markdown_table(sweep: Sweep) -> str:
    """The rows as a Markdown table of the paper's columns (the same on every machine for a seed)."""
    lines = ["| " + " | ".join(PAPER_COLUMNS) + " |", "|" + "---|" * len(PAPER_COLUMNS)]
    lines += ["| " + " | ".join(_format(row[c]) for c in PAPER_COLUMNS) + " |" for row in sweep.rows]
    return "\n".join(lines) + "\n"


def write_rows(sweep: Sweep, path: Path, columns: Sequence[str] = COLUMNS) -> None:
    """CSV or JSON by the file's suffix, of `columns` (default: all)."""
    rows = [{c: row[c] for c in columns} for row in sweep.rows]
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=1) + "\n")
    elif path.suffix == ".csv":
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    else:
        raise ValueError(f"--output must end in .csv or .json, got {path.name!r}")


def write_paper(sweep: Sweep, high: list[dict[str, float | str]], folder: Path) -> None:
    """The paper's files (PAPER_FILES) into `folder`, each named on stdout with its full path."""
    write_rows(sweep, folder / "results.csv", PAPER_COLUMNS)
    with (folder / "high_load.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=high_load.COLUMNS)
        writer.writeheader()
        writer.writerows(high)
    (folder / "high_load.md").write_text(high_load.markdown(high))
    (folder / "table.md").write_text(markdown_table(sweep))
    plot_sweep(
        sweep,
        folder / "figure.png",
        title="10,000 workers, 100-task jobs, exponential durations (mean 100 ms)",
        cdf_load=0.8,
    )
    print(f"paper files written to {folder.resolve()}:")
    for name, what in PAPER_FILES.items():
        print(f"  {folder.resolve() / name}  ({what})")


def run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    try:
        if args.out is not None and not args.paper:
            raise ValueError("--out is the folder of --paper's files; a sweep writes its rows with --output FILE")
        if args.paper:
            base, policies, loads = _paper(args)
        else:
            base, policies, loads = _config(args), _policies(args.policies), _floats(args.loads, "loads")
            if args.trace is not None:
                loads = loads[:1]  # a trace sets its own load
        if args.output is not None and args.output.suffix not in (".csv", ".json"):
            raise ValueError(f"--output must end in .csv or .json, got {args.output.name!r}")
        if args.plot is not None or args.paper:
            require_matplotlib()
        paper_dir, made = output_folder(args.out, "sparrow-paper") if args.paper else (None, False)
        high: list[dict[str, float | str]] = []
        try:
            with Progress(transient=True) as progress:
                bar = progress.add_task("simulating", total=len(policies) * len(loads))
                sweep = run_sweep(
                    base, policies, loads, warmup=args.warmup, on_point=lambda _p, _l: progress.advance(bar)
                )
                if args.paper:
                    n_points = sum(len(c.loads) for c in high_load.CASES) * len(policies)
                    bar = progress.add_task("high load", total=n_points)
                    high = high_load.run_high_load(
                        policies, n_jobs=args.jobs, warmup=args.warmup, on_point=lambda _p, _l: progress.advance(bar)
                    )
        except BaseException:  # an error or Ctrl-C: leave no empty folder behind
            if made and paper_dir is not None and not any(paper_dir.iterdir()):
                paper_dir.rmdir()
            raise
    except (ValueError, ImportError, OSError) as error:
        print(f"sparrow simulate: error: {error}", file=sys.stderr)
        return 2
    _print_table(sweep)
    if args.output is not None:
        write_rows(sweep, args.output)
        print(f"rows written to {args.output.resolve()}")
    if args.plot is not None:
        plot_sweep(sweep, args.plot)
        print(f"figure written to {args.plot.resolve()}")
    if paper_dir is not None:
        write_paper(sweep, high, paper_dir)
    return 0
