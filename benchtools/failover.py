"""Client failover, measured: `python -m benchtools.failover [--rounds 5] [--scheduler-timeout 0.1]`.

Each round starts a LocalCluster of 2 schedulers and 3 node monitors (separate processes), and a
client listing both schedulers that submits jobs of 10 tasks of 10 ms continuously (one every
20 ms). Once it has run for a while, the scheduler the client is connected to is SIGKILLed, or
frozen with SIGSTOP (SIGCONT after the round). Per fault it prints p50 and max over the rounds of:

- detection: from the signal to the client noticing (`Client.failovers[-1].lost_at`);
- failover: from noticing to being connected to the other scheduler (`connected_at`);
- relaunch: from noticing to the first relaunched task starting in its worker (each task returns
  the `time.monotonic()` it started at: one clock for every process of the host);
- tasks lost: tasks with no outcome, or a failed one, by the end of the round (must be 0).

The node monitors drop a silent scheduler after the same timeout (SPARROW_SCHEDULER_TIMEOUT, with
heartbeats four times as often): a frozen scheduler holds the slots that asked it for a task until
then, so it bounds how soon the relaunched tasks find a slot after a freeze.

The paper's figures for comparison: 100 ms detection timeout, 5 ms failover, 15 ms relaunch.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import time
from dataclasses import dataclass
from functools import partial

import trio
from rich.console import Console
from rich.table import Table

from bench.measure import cpu_counters, steal_percent
from sparrow_runtime import NodeMonitorConfig
from sparrow_runtime.client.core import Client
from sparrow_runtime.services.local_cluster import LocalCluster

JOB_TASKS = 10
TASK_SECONDS = 0.01
JOB_EVERY = 0.02  # seconds between submissions: 500 tasks/s of 10 ms, most of the 6 slots
WARM = 1.0  # seconds of load before the fault
AFTER = 2.0  # seconds of load after it
SETTLE_TIMEOUT = 30.0  # seconds the last jobs may take


def started_at(seconds: float) -> float:
    """A task: when it started (time.monotonic(), the host's clock), after holding its slot `seconds`."""
    start = time.monotonic()
    time.sleep(seconds)
    return start


@dataclass
class Round:
    fault: str
    detection: float
    failover: float
    relaunch: float | None
    lost: int
    relaunched: int


async def one_round(fault: str, scheduler_timeout: float) -> Round:
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="process"),
        schedulers=2,
        node_monitors=3,
        slots=2,
        dashboard=False,
        log_level="error",
    ) as cluster:
        async with Client(cluster.schedulers, secret=cluster.secret, scheduler_timeout=scheduler_timeout) as client:
            jobs = []
            stop = trio.Event()

            async def submit_continuously() -> None:
                while not stop.is_set():
                    jobs.append(await client.submit_job([partial(started_at, TASK_SECONDS)] * JOB_TASKS))
                    await trio.sleep(JOB_EVERY)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(submit_continuously)
                await trio.sleep(WARM)
                victim = cluster.pids[cluster.schedulers.index(client.connected_to)]
                fault_at = time.monotonic()
                os.kill(victim, getattr(signal, fault))
                try:
                    with trio.fail_after(SETTLE_TIMEOUT):
                        while not client.failovers or client.failovers[-1].connected_at is None:
                            await trio.sleep(0.001)
                    await trio.sleep(AFTER)
                    stop.set()
                    with trio.move_on_after(SETTLE_TIMEOUT):
                        for job in jobs:
                            await job.wait()
                finally:
                    if fault == "SIGSTOP":
                        os.kill(victim, signal.SIGCONT)
            record = client.failovers[-1]
            lost = relaunch_start = 0
            first_relaunch = None
            for job in jobs:
                if not job.done():
                    lost += job.n_tasks - job.n_done
                for outcome in (await job.outcomes()) if job.done() else []:
                    if not outcome.ok:
                        lost += 1
                    elif outcome.attempts > 1 and outcome.value >= record.lost_at:
                        relaunch_start += 1
                        first_relaunch = outcome.value if first_relaunch is None else min(first_relaunch, outcome.value)
            return Round(
                fault,
                detection=record.lost_at - fault_at,
                failover=record.connected_at - record.lost_at,
                relaunch=None if first_relaunch is None else first_relaunch - record.lost_at,
                lost=lost,
                relaunched=record.relaunched,
            )


def _ms(values: list[float]) -> tuple[str, str]:
    if not values:
        return "-", "-"
    return f"{1000 * statistics.median(values):.1f}", f"{1000 * max(values):.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchtools.failover", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per fault (default: 5)")
    parser.add_argument(
        "--scheduler-timeout", type=float, default=0.1, help="the client's and the node monitors' (default: 0.1 s)"
    )
    args = parser.parse_args(argv)
    logging.getLogger("sparrow_runtime").setLevel(logging.ERROR)  # each failover is reported below
    os.environ["SPARROW_SCHEDULER_TIMEOUT"] = str(args.scheduler_timeout)  # read by the node monitors
    os.environ["SPARROW_HEARTBEAT_INTERVAL"] = str(args.scheduler_timeout / 4)
    console = Console()
    before = cpu_counters()
    rounds = []
    for fault in ("SIGKILL", "SIGSTOP"):
        for i in range(args.rounds):
            result = trio.run(one_round, fault, args.scheduler_timeout)
            rounds.append(result)
            console.print(
                f"{fault} round {i + 1}: detection {1000 * result.detection:.1f} ms, failover "
                f"{1000 * result.failover:.1f} ms, relaunch "
                f"{'-' if result.relaunch is None else f'{1000 * result.relaunch:.1f} ms'}, "
                f"{result.relaunched} tasks relaunched, {result.lost} lost"
            )
    steal = steal_percent(before, cpu_counters())
    table = Table(
        title=f"Client failover, scheduler_timeout={args.scheduler_timeout:g} s, {args.rounds} rounds each "
        f"(steal {'?' if steal is None else f'{steal:.1f}%'})"
    )
    for column in ("fault", "detection p50 / max ms", "failover p50 / max ms", "relaunch p50 / max ms", "tasks lost"):
        table.add_column(column, justify="right")
    table.add_row("paper", "100 (timeout)", "5", "15", "")
    for fault in ("SIGKILL", "SIGSTOP"):
        mine = [r for r in rounds if r.fault == fault]
        cells = [
            " / ".join(_ms([getattr(r, name) for r in mine if getattr(r, name) is not None]))
            for name in ("detection", "failover", "relaunch")
        ]
        table.add_row(fault, *cells, str(sum(r.lost for r in mine)))
    console.print(table)
    return 0 if all(r.lost == 0 for r in rounds) else 1


if __name__ == "__main__":
    raise SystemExit(main())
