"""`sparrow local`: a cluster on this host (LocalCluster: schedulers and node monitors as processes on
loopback) until Ctrl-C; with --demo, run the demo workload on it, report, and stop.

It runs on TLS with a CA and certificates kept in the state folder (`tls/`, made on first use), unless
--insecure. While it runs, its addresses and credentials are in the local state (local_state.py), so
`sparrow submit`, `sparrow status`, Client() and SparrowExecutor() on this host find it with no flags.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from functools import partial

import trio
from rich.console import Console

from sparrow_experiments.demo_report import build_report

from ..client.local_state import LocalState, read_state, remove_state, state_dir, write_state
from ..demo.workload import make_workload, run_workload
from ..services.config import NodeMonitorConfig, SchedulerConfig
from ..services.cpus import format_cpu_list
from ..services.local_cluster import LocalCluster
from ..services.logsetup import setup_logging
from .common import INSECURE_WARNING, CommandError, add_command, settings
from .config import Resolved
from .demo_view import DemoProgress, plot_cdf, render_report


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "local",
        run,
        help="start a cluster on this host (--demo: and run the demo on it)",
        description="Start schedulers and node monitors on this host (loopback) until Ctrl-C. While it runs, "
        "`sparrow submit` and `sparrow status` find it with no flags. --demo runs short parallel jobs on it at "
        "--load, shows their progress, reports response times and scheduling delays against an ideal scheduler "
        "fed the same arrivals, and stops.",
    )


def run(args: argparse.Namespace) -> int:
    s = settings("local", args)
    setup_logging(s["log_level"])
    return run_demo(s) if s["demo"] else run_cluster(s)


def _cluster(s: Resolved) -> LocalCluster:
    return LocalCluster(
        s["schedulers"],
        s["node_monitors"],
        s["slots"],
        node_monitor=NodeMonitorConfig(
            executor=s["executor"],
            policy=s["policy"],
            weights=s["weight"],
            pipeline=s["pipeline"],
            pipeline_depth=s["pipeline_depth"],
            give_back=s["give_back"],
            steal=s["steal"],
        ),
        scheduler=SchedulerConfig(probe_ratio=s["probe_ratio"], bind_idle=s["bind_idle"]),
        share_cpus=s["share_cpus"],
        log_level=s["log_level"],
        tls=False if s["insecure"] else state_dir() / "tls",
    )


def _describe(s: Resolved) -> str:
    n, m = s["schedulers"], s["node_monitors"]
    return (
        f"{n} scheduler{'s' * (n > 1)}, {m} node monitor{'s' * (m > 1)} x {s['slots']} slots "
        f"({s['policy']} queues, {s['executor']} executors, {'--insecure: no TLS' if s['insecure'] else 'TLS'})"
    )


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM stop the command while this block runs: SIGTERM is turned into SIGINT, so
    the KeyboardInterrupt comes from Python's handler, or from trio's at a safe point inside trio.run."""
    # SIGINT may have been ignored from birth (a background job of a non-interactive shell)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM (a second Ctrl-C must not cut the shutdown short; it is bounded)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_cluster(s: Resolved) -> int:
    try:
        existing = read_state()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if existing is not None and existing.alive():
        raise CommandError(f"a `sparrow local` is already running on this host (pid {existing.pid}); stop it first")
    cluster, state = _cluster(s), None
    with _stop_on_signals():
        try:
            print(f"sparrow local: starting {_describe(s)}", flush=True)
            cluster.start()
            state = write_state(cluster.schedulers, cluster.node_monitors, cluster.secret, cluster.client_tls_files)
            if s["insecure"]:
                print(f"sparrow local: warning: {INSECURE_WARNING}", file=sys.stderr, flush=True)
            print(_connect_help(cluster, state), flush=True)
            while True:
                signal.pause()
        except KeyboardInterrupt:
            print("sparrow local: stopping", flush=True)
        finally:
            with _uninterrupted():
                if state is not None:
                    remove_state(state)
                cluster.close()
    return 0


def _cpu_layout(cluster: LocalCluster) -> str:
    if cluster.share_cpus:
        return "every service may use every CPU"
    nodes = " | ".join(format_cpu_list(cpus) for cpus in cluster.node_monitor_cpus)
    schedulers = " | ".join(format_cpu_list(cpus) for cpus in cluster.scheduler_cpus)
    return f"node monitors {nodes}; schedulers {schedulers} (--share-cpus: any)"


def _connect_help(cluster: LocalCluster, state: LocalState) -> str:
    if state.tls_files is not None:
        ca, cert, key = state.tls_files
        credentials = [f"  TLS client:    {cert} (an admin of this host's user; CA {ca})"]
        flags = f"--tls-ca {ca} --tls-cert {cert} --tls-key {key}"
        python = f"tls=TLS({ca!r}, {cert!r}, {key!r})"
    else:
        credentials = [f"  secret file:   {state.secret_file}"]
        flags = f"--secret-file {state.secret_file}"
        python = f"secret_file={state.secret_file!r}"
    return "\n".join(
        [
            f"  schedulers:    {' '.join(cluster.schedulers)}",
            f"  node monitors: {' '.join(cluster.node_monitors)}",
            f"  CPUs:          {_cpu_layout(cluster)}",
            *credentials,
            f"  dashboard:     {' '.join(cluster.dashboard_urls)}",
            "From this host, with no flags:",
            "  sparrow submit --tasks 10 -- hostname",
            "  sparrow status",
            "From Python, with no arguments: SparrowExecutor(), Client(); or",
            f"  SparrowExecutor({cluster.schedulers!r}, {python})",
            "From another shell:",
            f"  sparrow submit --scheduler {cluster.schedulers[0]} {flags} --tasks 10 -- hostname",
            "Press Ctrl-C to stop.",
        ]
    )


def run_demo(s: Resolved) -> int:
    if s["plot"]:
        try:
            from sparrow_core.sim.plot import require_matplotlib

            require_matplotlib()
        except ImportError as exc:
            raise CommandError(f"--plot: {exc}") from None
    slots = s["node_monitors"] * s["slots"]
    try:
        workload = make_workload(
            load=s["load"],
            duration=s["duration"],
            slots=slots,
            min_tasks=s["min_tasks"],
            max_tasks=s["max_tasks"],
            task_ms=s["task_ms"],
            seed=s["seed"],
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    console = Console(highlight=False)
    title = (
        f"sparrow local --demo: {_describe(s)}, load {s['load']:.0%}, {len(workload.arrivals):,} jobs of "
        f"{s['min_tasks']}-{s['max_tasks']} tasks of {s['task_ms'] / 2:g}-{s['task_ms'] * 1.5:g} ms"
    )
    console.print(title)
    cluster = _cluster(s)
    with _stop_on_signals():
        try:
            console.print("starting the cluster...")
            cluster.start()
            console.print(f"dashboard: {cluster.dashboard_url}")
            with DemoProgress(console) as progress:
                run = partial(run_workload, slots=slots, on_progress=progress.update)
                run = partial(run, tls=cluster.client_tls)
                records = trio.run(run, cluster.schedulers, cluster.secret, workload)
        except KeyboardInterrupt:
            console.print("sparrow local: demo interrupted")
            return 130
        finally:
            with _uninterrupted():
                cluster.close()
    report = build_report(records, node_monitors=s["node_monitors"], slots=s["slots"], schedulers=s["schedulers"])
    render_report(console, report, "Demo report")
    if s["plot"]:
        plot_cdf(report, s["plot"], title=f"job response time, load {s['load']:.0%}")
        console.print(f"CDF plot written to {s['plot']}")
    return 1 if report.failed else 0
