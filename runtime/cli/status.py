"""`sparrow status`: what each scheduler knows: its node monitors (slots, labels, queue lengths, last
heard from), its jobs in flight and its counters. Tables, or JSON with --json."""

from __future__ import annotations

import argparse
import json
import sys

import msgspec
import trio
from rich.console import Console
from rich.table import Table

from ..client.core import Client
from ..errors import SparrowError
from ..services.logsetup import setup_logging
from ..wire.messages import StatusReply
from .common import CommandError, add_command, client_target, settings


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "status",
        run,
        help="show the node monitors and jobs the schedulers know",
        description="Ask every scheduler for its node monitors (slots, labels, queue lengths, last heartbeat), "
        "its jobs in flight and its counters. Connects to the `sparrow local` of this host unless --scheduler "
        "is given.",
    )


def run(args: argparse.Namespace) -> int:
    s = settings("status", args)
    setup_logging(s["log_level"])
    schedulers, credentials = client_target(s)
    replies = trio.run(_ask_all, schedulers, credentials)
    failures = [(address, r) for address, r in replies if isinstance(r, str)]
    if s["json"]:
        data = [_as_dict(a, r) for a, r in replies if isinstance(r, StatusReply)]
        print(json.dumps(data, indent=1))
    else:
        console = Console(highlight=False)
        for address, reply in replies:
            if isinstance(reply, StatusReply):
                _render(console, address, reply)
    if failures and len(failures) == len(replies):
        raise CommandError("; ".join(f"{a}: {why}" for a, why in failures))
    for address, why in failures:
        print(f"sparrow status: error: {address}: {why}", file=sys.stderr)
    return 1 if failures else 0


async def _ask_all(schedulers: list[str], credentials: dict) -> list[tuple[str, StatusReply | str]]:
    replies: list = [None] * len(schedulers)

    async def ask(i: int, address: str) -> None:
        try:
            async with Client([address], **credentials) as client:
                replies[i] = (address, await client.status())
        except (SparrowError, trio.TooSlowError) as exc:
            replies[i] = (address, str(exc) or "no answer in time")

    async with trio.open_nursery() as nursery:
        for i, address in enumerate(schedulers):
            nursery.start_soon(ask, i, address)
    return replies


def _as_dict(address: str, r: StatusReply) -> dict:
    return {
        "scheduler": address,
        "scheduler_id": r.scheduler_id,
        "nodes": [msgspec.structs.asdict(n) for n in r.nodes],
        "jobs": [msgspec.structs.asdict(j) for j in r.jobs],
        "counters": r.counters,
    }


def _render(console: Console, address: str, r: StatusReply) -> None:
    nodes = Table(title=f"scheduler {r.scheduler_id} at {address}: {len(r.nodes)} node monitors", title_justify="left")
    for column in ("node monitor", "state", "slots", "labels", "queued", "busy", "last heard"):
        nodes.add_column(column, justify="left" if column in ("node monitor", "state", "labels") else "right")
    for n in r.nodes:
        nodes.add_row(
            n.node_id,
            "draining" if n.draining else "up",
            str(n.slots),
            ",".join(n.labels) or "-",
            str(n.queued),
            str(n.busy),
            f"{n.silent_for:.1f} s ago",
        )
    console.print(nodes)
    jobs = Table(title=f"{len(r.jobs)} jobs in flight", title_justify="left")
    for column in ("job", "user", "priority", "tasks", "launched", "running", "done"):
        jobs.add_column(column, justify="left" if column == "user" else "right")
    for j in r.jobs:
        jobs.add_row(*map(str, (j.job_id, j.user or "-", j.priority, j.tasks, j.launched, j.running, j.done)))
    console.print(jobs)
    counters = ", ".join(f"{k} {v:,}" for k, v in sorted(r.counters.items()))
    console.print(f"counters: {counters or 'none yet'}")
