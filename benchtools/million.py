"""A million tasks: `python -m benchtools.million` runs `ex.map(int, range(1_000_000))` through a
SparrowExecutor and then ten `Client.submit_job` of 100,000 tasks (the per-job limit) submitted
together, on a LocalCluster of 1 scheduler + 2 node monitors x 1 slot, and reports:

- each run's rate beside a 10,000-task map's on the same cluster (target: within 20%);
- the peak RSS of the client (this process), the scheduler and the node monitors (each with its
  executor workers) over their RSS before, per task queued at the peak: the map keeps at most its
  `buffersize` tasks submitted, so its memory is flat; the jobs put a million tasks in the
  scheduler's queue at once (target: scheduler under 1 KB per queued task);
- that every result came back (the map's values in order, every job's outcomes all successful).

`--map-tasks`, `--jobs` and `--job-tasks` scale it down (a small run is a test of correctness:
tests/bench/test_million.py); `--executor thread` for a quicker run; `--pipeline-depth N` runs the node
monitors pipelined N deep (docs/runtime.md: the no-op rate about doubles at 16). On a 2-core machine the
full run takes about 1M / (the no-op rate) seconds per part (at 3,000 tasks/s: about 6 minutes each).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

MAP_TASKS = 1_000_000
JOBS = 10
JOB_TASKS = 100_000
BASELINE_TASKS = 10_000
SAMPLE_S = 0.1


def rss_bytes(pid: int) -> int:
    """Resident set size of `pid` and its live children (a node monitor and its workers), bytes."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class PeakRss:
    """Samples the RSS of named processes every SAMPLE_S seconds in a thread, keeping each one's peak."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids
        self.before = self._now()
        self.peak = dict(self.before)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _now(self) -> dict[str, int]:
        return {name: max(rss_bytes(p) for p in pids) for name, pids in self.pids.items()}

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            for name, value in self._now().items():
                self.peak[name] = max(self.peak[name], value)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def per_task(self, queued: int) -> dict[str, float]:
        return {name: (self.peak[name] - self.before[name]) / queued for name in self.pids}


def run(args: argparse.Namespace) -> list[str]:
    """The runs; their report lines. Raises RuntimeError if a result is missing or wrong."""
    import trio

    from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig, SparrowExecutor

    lines = []
    pipelined = {"pipeline_depth": args.pipeline_depth} if args.pipeline_depth else {}
    node = NodeMonitorConfig(executor=args.executor, **pipelined)
    with LocalCluster(schedulers=1, node_monitors=2, slots=1, node_monitor=node) as cluster:
        pids = {"client": [os.getpid()], "scheduler": cluster.pids[:1], "node monitor": cluster.node_monitor_pids}
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
            list(ex.map(int, range(1000)))  # warm up
            start = time.perf_counter()
            list(ex.map(int, range(args.baseline_tasks)))
            baseline = args.baseline_tasks / (time.perf_counter() - start)
            lines.append(f"{args.baseline_tasks:,}-task map: {baseline:,.0f} tasks/s")
            with PeakRss(pids) as rss:
                start = time.perf_counter()
                count = 0
                for i, value in enumerate(ex.map(int, range(args.map_tasks))):
                    if value != i:
                        raise RuntimeError(f"map result {i} is {value!r}")
                    count += 1
                rate = count / (time.perf_counter() - start)
            if count != args.map_tasks:
                raise RuntimeError(f"map gave {count} results of {args.map_tasks}")
            queued = min(args.map_tasks, 8 * 256)  # SparrowExecutor's buffersize: what the map keeps submitted
            lines.append(_report(f"{args.map_tasks:,}-task map", rate, baseline, args.baseline_tasks, rss, queued))

        total = args.jobs * args.job_tasks

        async def jobs() -> tuple[float, int]:
            """Their rate, and the most tasks the client had unfinished (queued) at once."""
            # room for every job at once (the default max_pending_tasks, 100,000, would hold the second
            # job back until the first is done, and a million would never be queued together)
            async with Client(cluster.schedulers, secret=cluster.secret, max_pending_tasks=total) as client:
                start = time.perf_counter()
                handles, queued = [], 0
                for _ in range(args.jobs):
                    handles.append(await client.submit_job([int] * args.job_tasks))
                    queued = max(queued, client.unfinished)
                for handle in handles:
                    outcomes = await handle.outcomes()
                    failed = [o for o in outcomes if not o.ok]
                    if len(outcomes) != args.job_tasks or failed:
                        raise RuntimeError(f"a job ended with {len(outcomes)} outcomes, {len(failed)} failed")
                return total / (time.perf_counter() - start), queued

        with PeakRss(pids) as rss:
            rate, queued = trio.run(jobs)
        name = f"{args.jobs} jobs of {args.job_tasks:,} submitted together"
        lines.append(_report(name, rate, baseline, args.baseline_tasks, rss, queued))
    return lines


def _report(name: str, rate: float, baseline: float, baseline_tasks: int, rss: PeakRss, queued: int) -> str:
    per_task = rss.per_task(queued)
    memory = ", ".join(f"{who} {value:,.0f} B" for who, value in per_task.items())
    peaks = ", ".join(f"{who} {rss.peak[who] / 2**20:,.0f} MiB" for who in per_task)
    return (
        f"{name}: {rate:,.0f} tasks/s, {rate / baseline:.2f}x the {baseline_tasks:,}-task map's; "
        f"peak RSS over before per queued task ({queued:,} queued at most): {memory}; peaks {peaks}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--map-tasks", type=int, default=MAP_TASKS)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--job-tasks", type=int, default=JOB_TASKS, help="tasks per job (at most 100,000)")
    parser.add_argument("--baseline-tasks", type=int, default=BASELINE_TASKS)
    parser.add_argument("--executor", choices=("process", "thread"), default="process")
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        default=0,
        metavar="N",
        help="pipelined late binding N deep (default 0: the node monitors' own depth)",
    )
    args = parser.parse_args(argv)
    if min(args.map_tasks, args.jobs, args.job_tasks, args.baseline_tasks) < 1:
        parser.error("--map-tasks, --jobs, --job-tasks and --baseline-tasks must be >= 1")
    if args.pipeline_depth < 0:
        parser.error("--pipeline-depth must be >= 0")
    started = time.perf_counter()
    for line in run(args):
        print(line, flush=True)
    print(
        f"executor={args.executor}, pipeline depth {args.pipeline_depth or 'default'}; "
        f"{time.perf_counter() - started:.0f} s in all; load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
