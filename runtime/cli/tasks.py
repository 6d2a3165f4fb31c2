"""`sparrow tasks`: how recent tasks ended, from each scheduler's task history (services/task_history.py):
user, job, state, node monitor, attempts, queue wait, run time and error, newest first. A table (with --output,
the end of what each task printed after it), or JSON with --json (the output tail always in it). Users see
their own tasks; an admin (or anyone on an --insecure cluster) sees every user's."""

from __future__ import annotations

import argparse
import json
import re
import sys

import msgspec
import trio
from rich.console import Console
from rich.table import Table

from ..client.core import Client
from ..errors import SparrowError
from ..services.logsetup import setup_logging
from ..wire.limits import MAX_TASK_RECORDS
from ..wire.messages import TaskRecord
from .common import CommandError, add_command, client_target, settings

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def duration(text: str) -> float:
    """Seconds of a duration such as `90`, `90s`, `10m`, `2h`, `1d`: argparse's type for --since."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (a number with s, m, h or d: 10m)")
    return float(match[1]) * _UNITS[match[2] or "s"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        subparsers,
        "tasks",
        run,
        help="show how recent tasks ended (the schedulers' task history)",
        description="Ask every scheduler for its record of recent tasks, newest first: user, job, state, node "
        "monitor, attempts, queue wait, run time and error. You see your own tasks; an admin sees everyone's. "
        "Connects to the `sparrow local` of this host unless --scheduler is given.",
    )
    parser.add_argument("--user", default="", metavar="U", help="only U's tasks (an admin's choice; default: all)")
    parser.add_argument("--failed", action="store_true", help="only the tasks that did not return a value")
    parser.add_argument("--job", type=int, default=None, metavar="J", help="only the tasks of job J (its id)")
    parser.add_argument("--since", type=duration, default=0.0, metavar="T", help="only tasks ended in the last T (10m)")
    parser.add_argument(
        "--limit", type=int, default=100, metavar="N", help=f"at most N tasks per scheduler (<= {MAX_TASK_RECORDS})"
    )
    parser.add_argument(
        "--output", action="store_true", help="after the table, the end of what each task printed (its last 4 KiB)"
    )


def run(args: argparse.Namespace) -> int:
    s = settings("tasks", args)
    setup_logging(s["log_level"])
    if not 1 <= args.limit <= MAX_TASK_RECORDS:
        raise CommandError(f"--limit must be 1 to {MAX_TASK_RECORDS}, got {args.limit}")
    schedulers, credentials = client_target(s)
    query = {"user": args.user, "failed": args.failed, "job": args.job, "since": args.since, "limit": args.limit}
    replies = trio.run(_ask_all, schedulers, credentials, query)
    failures = [(address, r) for address, r in replies if isinstance(r, str)]
    found = [(address, r) for address, r in replies if not isinstance(r, str)]
    if s["json"]:
        print(json.dumps([{"scheduler": a, **msgspec.structs.asdict(t)} for a, ts in found for t in ts], indent=1))
    else:
        _render(Console(highlight=False), found, args.output)
    if failures and len(failures) == len(replies):
        raise CommandError("; ".join(f"{a}: {why}" for a, why in failures))
    for address, why in failures:
        print(f"sparrow tasks: error: {address}: {why}", file=sys.stderr)
    return 1 if failures else 0


async def _ask_all(schedulers: list[str], credentials: dict, query: dict) -> list[tuple[str, list[TaskRecord] | str]]:
    replies: list = [None] * len(schedulers)

    async def ask(i: int, address: str) -> None:
        try:
            async with Client([address], **credentials) as client:
                replies[i] = (address, await client.tasks(**query))
        except (SparrowError, ValueError, trio.TooSlowError) as exc:
            replies[i] = (address, str(exc) or "no answer in time")

    async with trio.open_nursery() as nursery:
        for i, address in enumerate(schedulers):
            nursery.start_soon(ask, i, address)
    return replies


def _render(console: Console, found: list[tuple[str, list[TaskRecord]]], output: bool = False) -> None:
    rows = sorted(((t, a) for a, ts in found for t in ts), key=lambda ta: ta[0].ended_at, reverse=True)
    table = Table(title=f"{len(rows)} tasks", title_justify="left")
    for column in ("job", "task", "user", "state", "node monitor", "attempts", "queued", "ran", "error"):
        table.add_column(column, justify="left" if column in ("user", "state", "node monitor", "error") else "right")
    for t, _ in rows:
        table.add_row(
            str(t.job_id),
            str(t.task),
            t.user or "-",
            t.state,
            t.node or "-",
            str(t.attempts),
            f"{t.queue_wait:.3f} s",
            f"{t.run_time:.3f} s",
            t.error or "",
        )
    console.print(table)
    if output:
        for t, _ in rows:
            if t.output_tail:
                console.rule(
                    f"task {t.job_id}.{t.task} ({t.state}, {t.node or '-'}): the end of its output", align="left"
                )
                console.out(t.output_tail.rstrip("\n"), highlight=False)
