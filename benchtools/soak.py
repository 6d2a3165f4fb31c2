"""A soak run, not a benchmark: `python -m benchtools.soak --minutes 10`.

Runs a LocalCluster for that long at 80% load of 10 ms tasks (jobs of 10 tasks arriving at random,
a Poisson process, from one client) and checks what must hold however long a cluster runs:

- every task ends with exactly one outcome: a counter per task id (job, index) counts the outcomes
  the client delivers, and each value must be the (job, index) the task was given. (A second
  outcome for a task is also a protocol error to the client, which would fail every task still
  waiting on that connection: that shows up as failed outcomes.)
- no service grows: the RSS and the open file descriptors of every scheduler and node monitor,
  and its number of executor worker processes, idle at the start, after a warm-up, and at the end.

It prints a line of progress every 30 s and a report at the end; exit status 0 if every task had
exactly one successful outcome, 1 otherwise. Tasks sleep: they hold a slot, not a core.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import trio

from sparrow_runtime.client.core import Client, build_submit
from sparrow_runtime.services.local_cluster import LocalCluster
from sparrow_runtime.wire.messages import Outcome
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

PROGRESS_EVERY = 30.0  # seconds
WARMUP = 30.0  # seconds of load before the "warm" snapshot (or a tenth of the run, if shorter)
FINISH_TIMEOUT = 60.0  # seconds the last jobs may take once arrivals stop


def soak_task(job: int, index: int, seconds: float) -> tuple[int, int]:
    """Hold a slot for `seconds`; return the task's id, so its outcome can be checked against it."""
    time.sleep(seconds)
    return job, index


@dataclass
class Tally:
    """What the client has seen: outcomes per task id, failures by reason, wrong values."""

    outcomes: Counter = field(default_factory=Counter)  # (job, index) -> outcomes delivered
    expected: set = field(default_factory=set)  # every (job, index) submitted
    failures: Counter = field(default_factory=Counter)  # reason -> count
    wrong_values: int = 0
    jobs_in_flight: int = 0

    def record(self, job: int, task: int, outcome: Outcome) -> None:
        self.outcomes[job, task] += 1
        if not outcome.ok:
            error = outcome.error
            self.failures[error.splitlines()[-1][:120] if error else "failed"] += 1
        elif unpack_outcome(outcome) != (job, task):
            self.wrong_values += 1

    def verdict(self) -> dict[str, int]:
        counts = Counter(self.outcomes.get(task, 0) for task in self.expected)
        return {
            "tasks": len(self.expected),
            "exactly one outcome": counts.get(1, 0),
            "no outcome": counts.get(0, 0),
            "more than one": sum(n for times, n in counts.items() if times > 1),
            "outcomes for unknown tasks": len(set(self.outcomes) - self.expected),
            "failed": sum(self.failures.values()),
            "wrong value": self.wrong_values,
        }


@dataclass(frozen=True)
class Usage:
    """One service's resources at one moment."""

    rss_mb: float
    fds: int
    workers: int


def usage(pid: int) -> Usage:
    """RSS, open descriptors and child processes (executor workers) of process `pid`, from /proc."""
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return Usage(rss_kb / 1024, fds, len(_children(pid)))


def _children(pid: int) -> list[int]:
    """The live child processes of `pid` (each thread's children: /proc/PID/task/*/children)."""
    children = []
    for thread in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            children += [int(c) for c in (thread / "children").read_text().split()]
    return children


def snapshot(cluster: LocalCluster) -> dict[str, Usage]:
    roles = [f"scheduler {a}" for a in cluster.schedulers] + [f"node monitor {i}" for i in cluster.node_ids]
    return {role: usage(pid) for role, pid in zip(roles, cluster.pids, strict=True)}


async def drive(cluster: LocalCluster, args: argparse.Namespace, snapshots: dict, tally: Tally) -> None:
    """Submit jobs at the configured rate for the run's length, then wait for the last outcomes."""
    rng = random.Random(args.seed)
    task_s = args.task_ms / 1000
    slots = args.node_monitors * args.slots
    job_rate = args.load * slots / (args.tasks_per_job * task_s)
    length = args.minutes * 60
    warm_at = min(WARMUP, length / 10)
    async with Client(cluster.schedulers, secret=cluster.secret) as client:
        start = trio.current_time()
        next_progress, arrival, job = start + PROGRESS_EVERY, start, 0
        while arrival < start + length:
            await trio.sleep_until(arrival)
            _submit(client, job, args.tasks_per_job, task_s, tally)
            job += 1
            now = trio.current_time()
            if "warm" not in snapshots and now - start >= warm_at:
                snapshots["warm"] = snapshot(cluster)
            if now >= next_progress:
                _progress(now - start, tally)
                next_progress += PROGRESS_EVERY
            arrival += rng.expovariate(job_rate)
        with trio.move_on_after(FINISH_TIMEOUT):
            while tally.jobs_in_flight:
                await trio.sleep(0.05)
        _progress(trio.current_time() - start, tally)


def _submit(client: Client, job: int, tasks: int, task_s: float, tally: Tally) -> None:
    payloads = [pack_task(partial(soak_task, job, i, task_s)) for i in range(tasks)]
    tally.expected.update((job, i) for i in range(tasks))
    tally.jobs_in_flight += 1
    left = tasks

    def on_outcome(task: int, outcome: Outcome) -> None:
        nonlocal left
        tally.record(job, task, outcome)
        left -= 1
        if left == 0:
            tally.jobs_in_flight -= 1

    client.send_job(build_submit(payloads, "", 0, None, None), on_outcome)


def _progress(elapsed: float, tally: Tally) -> None:
    done = sum(tally.outcomes.values())
    print(
        f"soak: {elapsed:6.0f} s  tasks {len(tally.expected):,} submitted, {done:,} outcomes, "
        f"{sum(tally.failures.values())} failed, {tally.jobs_in_flight} jobs in flight",
        flush=True,
    )


def report(args: argparse.Namespace, elapsed: float, tally: Tally, snapshots: dict) -> bool:
    verdict = tally.verdict()
    print(
        f"\nsoak report: {args.minutes:g} min ({elapsed:.0f} s with the last outcomes), {args.node_monitors} node "
        f"monitors x {args.slots} slots, load {args.load:.0%}, jobs of {args.tasks_per_job} tasks of "
        f"{args.task_ms:g} ms"
    )
    print(f"  tasks/s: {verdict['tasks'] / elapsed:,.0f}")
    for name, value in verdict.items():
        print(f"  {name + ':':28} {value:,}")
    for reason, count in tally.failures.most_common(5):
        print(f"    {count:,} x {reason}")
    phases = [p for p in ("start", "warm", "end") if p in snapshots]
    print(f"\n  {'service':28} " + "  ".join(f"{p + ' RSS MB':>12} {'fds':>4} {'wkrs':>4}" for p in phases))
    for role in snapshots["start"]:
        cells = [snapshots[p][role] for p in phases]
        print(f"  {role:28} " + "  ".join(f"{u.rss_mb:12.1f} {u.fds:4d} {u.workers:4d}" for u in cells))
    ok = verdict["exactly one outcome"] == verdict["tasks"] and not (
        verdict["outcomes for unknown tasks"] or verdict["failed"] or verdict["wrong value"]
    )
    print(
        f"\nsoak: {'PASS' if ok else 'FAIL'}: every task had exactly one successful outcome"
        + ("" if ok else " (not so)")
    )
    return ok


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchtools.soak", description=__doc__.split("\n\n")[1], allow_abbrev=False
    )
    p.add_argument("--minutes", type=float, default=10.0, help="how long jobs arrive (default: 10)")
    p.add_argument("--node-monitors", type=int, default=2, help="node monitors (default: 2)")
    p.add_argument("--slots", type=int, default=4, help="slots per node monitor (default: 4)")
    p.add_argument("--load", type=float, default=0.8, help="offered load, a fraction of the slots (default: 0.8)")
    p.add_argument("--task-ms", type=float, default=10.0, help="task duration in ms (default: 10)")
    p.add_argument("--tasks-per-job", type=int, default=10, help="tasks per job (default: 10)")
    p.add_argument("--seed", type=int, default=None, help="seed of the arrivals (default: random)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if (
        args.minutes <= 0
        or not 0 < args.load < 1
        or args.task_ms <= 0
        or min(args.node_monitors, args.slots, args.tasks_per_job) < 1
    ):
        print("soak: --minutes and --task-ms must be > 0, --load in (0, 1), the counts >= 1", file=sys.stderr)
        return 2
    tally, snapshots = Tally(), {}
    with LocalCluster(schedulers=1, node_monitors=args.node_monitors, slots=args.slots) as cluster:
        snapshots["start"] = snapshot(cluster)
        started = time.monotonic()
        trio.run(drive, cluster, args, snapshots, tally)
        elapsed = time.monotonic() - started
        snapshots["end"] = snapshot(cluster)
    return 0 if report(args, elapsed, tally, snapshots) else 1


if __name__ == "__main__":
    sys.exit(main())
