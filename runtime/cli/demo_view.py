"""What `sparrow local --demo` shows: a live progress display while the workload runs (on a terminal;
otherwise, e.g. in CI, a plain line every few seconds), the report tables, and the CDF plot."""

from __future__ import annotations

import math
import time
from os import PathLike

import numpy as np
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from sparrow_experiments.demo_report import PERCENTILES, DemoReport, percentiles

from ..demo.workload import Progress as WorkloadProgress

PLAIN_INTERVAL = 2.0  # seconds between progress lines when not on a terminal


class DemoProgress:
    """Call `update` with the workload's progress; use as a context manager around the run."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal and not console.is_dumb_terminal
        self._started = time.monotonic()
        self._last_line = self._started
        self._bar = Progress(
            TextColumn("jobs"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            disable=not self.live,
        )
        self._task = self._bar.add_task("jobs", total=None, detail="")

    def __enter__(self) -> DemoProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._bar.stop()

    def update(self, p: WorkloadProgress) -> None:
        now = time.monotonic()
        elapsed = max(now - self._started, 1e-9)
        detail = f"{p.tasks_done:,}/{p.tasks_total:,} tasks, {p.tasks_done / elapsed:,.0f} tasks/s"
        if p.tasks_failed:
            detail += f", {p.tasks_failed} failed"
        if self.live:
            self._bar.update(self._task, completed=p.jobs_done, total=p.jobs_total, detail=detail)
        elif now - self._last_line >= PLAIN_INTERVAL or p.jobs_done == p.jobs_total:
            self._last_line = now
            self.console.print(f"{elapsed:5.1f} s  jobs {p.jobs_done}/{p.jobs_total}, {detail}", highlight=False)


def _number(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.1f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 and not math.isnan(a) else "-"


def render_report(console: Console, report: DemoReport, title: str) -> None:
    summary = Table(title=title, show_header=False, title_justify="left")
    summary.add_column(style="bold")
    summary.add_column(justify="right")
    summary.add_row("jobs run", f"{report.jobs:,}")
    summary.add_row("tasks run", f"{report.tasks:,}" + (f" ({report.failed} failed)" if report.failed else ""))
    summary.add_row("wall time", f"{report.wall:.1f} s")
    summary.add_row("throughput", f"{report.throughput:,.0f} tasks/s")
    summary.add_row("slot utilisation", f"{report.utilisation:.0%} of {report.slots} slots")
    console.print(summary)

    compare = Table(
        title="Sparrow against an ideal scheduler and the simulator, fed the same arrivals (ms)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    compare.add_column("", no_wrap=True)
    for column in ("sparrow", "ideal", "sparrow / ideal", "simulated", "simulated / sparrow"):
        compare.add_column(column, justify="right")
    for name, measured, ideal, simulated in (
        ("job response", report.response, report.ideal_response, report.simulated_response),
        ("scheduling delay", report.delay, report.ideal_delay, report.simulated_delay),
    ):
        rows = zip(PERCENTILES, percentiles(measured), percentiles(ideal), percentiles(simulated), strict=True)
        for q, a, b, c in rows:
            compare.add_row(f"{name} p{q}", _number(a), _number(b), _ratio(a, b), _number(c), _ratio(c, a))
    console.print(compare)
    console.print(
        f"Mean job response time: {report.mean_response_over_ideal:.2f}x the ideal's "
        "(the ideal: one infinitely fast central queue over the same slots, no network; see docs/cli.md).",
        highlight=False,
    )
    console.print(_model_line(report), highlight=False)
    for error in report.errors:
        console.print(f"failed task: {error}", highlight=False, markup=False)


def _model_line(report: DemoReport) -> str:
    hops = report.hops
    if hops is None:
        return "Simulated: too few tasks queued and too few found a free slot to measure this run's delays."
    return (
        "Simulated: the simulator's sparrow policy replaying these jobs with the delays this run measured "
        f"(a slot's gap between queued tasks {hops.chain_gap * 1e3:.2f} ms, an idle slot's start "
        f"{hops.idle_start * 1e3:.2f} ms, outcome to client {hops.result * 1e3:.2f} ms; docs/cli.md)."
    )


def plot_cdf(report: DemoReport, path: str | PathLike[str], title: str) -> None:
    """Draw the CDF of job response times, measured and ideal, to `path` (format from its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    curves = [("sparrow (measured)", report.response), ("ideal (same arrivals)", report.ideal_response)]
    if report.simulated_response.size:
        curves.append(("simulated (same arrivals, measured delays)", report.simulated_response))
    for label, values in curves:
        data = np.sort(values) * 1000
        ax.plot(data, np.arange(1, data.size + 1) / data.size, label=label)
    ax.set_xlabel("job response time (ms)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
