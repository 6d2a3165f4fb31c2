"""How busy a slot is between 1 ms tasks, measured in the tasks themselves: each task stamps its own start and end
(time.perf_counter, CLOCK_MONOTONIC on Linux: one clock for every process of the host) and says which process ran
it. Per worker process, the gaps between one task's end and the next one's start are the slot's idle time, from
the worker returning from the task to it calling the next (the worker's own encode and decode, its send, and
whatever ran on its CPU meanwhile); the slot's busy share is its time in tasks over its span. The ratio that
benchtools.users reports (`ms_busy`: nominal rate over the rate reached) also counts the sleep's own overshoot
(`time.sleep(0.001)` takes 1.05-1.1 ms) and the map's start; this one does not.

Sparrow (a LocalCluster of 1 scheduler + 2 node monitors x 1 slot, process executors, through SparrowExecutor)
and a ProcessPoolExecutor(2) alternate round by round, the first one rotating.

    python -m benchtools.slot_gaps --rounds 4
    python -m benchtools.slot_gaps --systems sparrow --tasks 8000
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import time
from concurrent.futures import Executor, ProcessPoolExecutor

from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor

SLOTS = 2
TASK_S = 0.001


def stamped_nap(seconds: float) -> tuple[int, float, float]:
    """Sleep `seconds`; (this process's id, when the sleep began, when it ended)."""
    start = time.perf_counter()
    time.sleep(seconds)
    return os.getpid(), start, time.perf_counter()


def measure(ex: Executor, tasks: int) -> dict[str, float]:
    """One map of `tasks` stamped 1 ms naps on `ex`: the slots' busy share and gaps, and the nominal share."""
    start = time.perf_counter()
    stamps = list(ex.map(stamped_nap, [TASK_S] * tasks))
    wall = time.perf_counter() - start
    by_worker: dict[int, list[tuple[float, float]]] = {}
    for pid, begin, end in stamps:
        by_worker.setdefault(pid, []).append((begin, end))
    gaps: list[float] = []
    busy = span = 0.0
    for runs in by_worker.values():
        runs.sort()
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(runs)]
        busy += sum(end - begin for begin, end in runs)
        span += runs[-1][1] - runs[0][0]
    gaps.sort()
    runs_all = sorted(end - begin for _, begin, end in stamps)
    return {
        "slot_busy": busy / span,
        "gap_p50_us": 1e6 * gaps[len(gaps) // 2],
        "gap_p90_us": 1e6 * gaps[len(gaps) * 9 // 10],
        "gap_mean_us": 1e6 * statistics.mean(gaps),
        "run_p50_ms": 1e3 * runs_all[len(runs_all) // 2],
        "nominal_share": tasks * TASK_S / SLOTS / wall,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=4000, help="1 ms tasks per map")
    parser.add_argument("--systems", default="sparrow,pool", help="comma list of sparrow, pool")
    parser.add_argument(
        "--share-cpus", action="store_true", help="Sparrow's node monitors and workers on every CPU, not one each"
    )
    args = parser.parse_args(argv)
    names = args.systems.split(",")
    if args.rounds < 1 or args.tasks < 2 or not set(names) <= {"sparrow", "pool"}:
        parser.error("--rounds >= 1, --tasks >= 2, --systems of sparrow and pool")
    with contextlib.ExitStack() as stack:
        executors: dict[str, Executor] = {}
        if "pool" in names:  # forks before the executor's thread runs
            executors["pool"] = stack.enter_context(ProcessPoolExecutor(SLOTS))
        if "sparrow" in names:
            options = NodeMonitorConfig(executor="process")
            cluster = stack.enter_context(
                LocalCluster(
                    node_monitor=options,
                    schedulers=1,
                    node_monitors=SLOTS,
                    slots=1,
                    dashboard=False,
                    share_cpus=args.share_cpus,
                )
            )
            executors["sparrow"] = stack.enter_context(SparrowExecutor(cluster.schedulers, secret=cluster.secret))
        for ex in executors.values():
            list(ex.map(stamped_nap, [0.0] * 100))  # every worker started, the function shipped
        print(f"load average {os.getloadavg()[0]:.2f}")
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                f = measure(executors[name], args.tasks)
                print(
                    f"{name:8s} slot busy {100 * f['slot_busy']:.1f}%  gap p50 {f['gap_p50_us']:.0f} us, "
                    f"p90 {f['gap_p90_us']:.0f} us, mean {f['gap_mean_us']:.0f} us  "
                    f"sleep p50 {f['run_p50_ms']:.3f} ms  "
                    f"nominal share {100 * f['nominal_share']:.0f}%",
                    flush=True,
                )
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
