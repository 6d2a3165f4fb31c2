"""Where a task's CPU goes, process by process: the client (this process: the caller's thread and the executor's),
the scheduler, the node monitors and their workers, each one's CPU microseconds and voluntary wake-ups per task, for
a map of no-op tasks of a function from `__main__` (`--figure map`) or one 10-task map after another (`--figure job`:
the figures are then per job, and `wall` is a job's mean latency). A LocalCluster of 1 scheduler and 2 node monitors
x 1 slot, process executors, through SparrowExecutor. CPU per task is what a shared machine moves least (wall time
follows the machine's load), and the split by process says which one a change helped.

`--pythons A,B,...` runs the same measurement under each python in turn (each a build of its own, e.g. the
virtualenvs `python -m benchtools.ab` keeps under .asv/ab/<commit>/venv; `NAME=PYTHON` names one), `--runs` times,
alternating, and prints each figure's median per build and the ratio of each build to the first:

    python -m benchtools.roles --figure map
    python -m benchtools.roles --figure job --runs 3 --pythons base=PYTHON,head=PYTHON
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from bench.bench_vs_pool import _children_by_parent, process_cpu_seconds
from bench.cluster_options import cluster_options

ROLES = ("client", "scheduler", "node_monitors", "workers")
JOB_SIZE = 10
DEFAULT_TASKS = {"map": 40_000, "job": 4_000}


def square(x: int) -> int:
    """A user's no-op, defined in the script: `__main__.square` when it runs as one."""
    return x * x


def wakeups(pid: int) -> int:
    """Voluntary context switches of process `pid`, all its threads (0 if it is gone)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
    except (OSError, ValueError):
        pass
    return total


def processes(scheduler_pids: Iterable[int], node_monitor_pids: Iterable[int]) -> dict[str, list[int]]:
    """Each role's processes: this one, the schedulers, the node monitors, and every descendant of a node
    monitor (its workers, and its fork server)."""
    children = _children_by_parent()
    workers, todo = [], [child for pid in node_monitor_pids for child in children.get(pid, ())]
    while todo:
        pid = todo.pop()
        workers.append(pid)
        todo.extend(children.get(pid, ()))
    return {
        "client": [os.getpid()],
        "scheduler": list(scheduler_pids),
        "node_monitors": list(node_monitor_pids),
        "workers": workers,
    }


def _counters(roles: dict[str, list[int]]) -> dict[str, tuple[float, int]]:
    return {
        role: (sum(process_cpu_seconds(p) for p in pids), sum(wakeups(p) for p in pids)) for role, pids in roles.items()
    }


def measure(figure: str, tasks: int, rounds: int, transport: str | None = None) -> dict[str, float]:
    """Per task (per job for "job"), medians over `rounds`: wall us and each role's CPU us and wake-ups."""
    from sparrow_runtime import LocalCluster, SparrowExecutor

    links = {} if transport is None else {"transport": transport}
    per = JOB_SIZE if figure == "job" else 1
    samples: dict[str, list[float]] = {}
    with (
        LocalCluster(
            schedulers=1, node_monitors=2, slots=1, dashboard=False, **links, **cluster_options("process")
        ) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor,
    ):
        list(executor.map(square, range(2_000)))  # every worker and link ready, the function shipped
        node_monitors = set(cluster.node_monitor_pids)
        roles = processes(set(cluster.pids) - node_monitors, node_monitors)
        for _ in range(rounds):
            before, started = _counters(roles), time.perf_counter()
            if figure == "job":
                for _ in range(tasks // JOB_SIZE):
                    list(executor.map(square, range(JOB_SIZE)))
            else:
                list(executor.map(square, range(tasks)))
            wall, after = time.perf_counter() - started, _counters(roles)
            samples.setdefault("wall_us", []).append(wall * 1e6 / tasks * per)
            cpu_all = 0.0
            for role in ROLES:
                cpu = (after[role][0] - before[role][0]) * 1e6 / tasks * per
                cpu_all += cpu
                samples.setdefault(f"{role}_cpu_us", []).append(cpu)
                samples.setdefault(f"{role}_wakeups", []).append((after[role][1] - before[role][1]) / tasks * per)
            samples.setdefault("all_cpu_us", []).append(cpu_all)
    return {key: statistics.median(values) for key, values in samples.items()}


def _alternate(pythons: list[str], args: argparse.Namespace) -> list[list[dict[str, float]]]:
    """`args.runs` runs under each python in turn: per python, its runs' figures."""
    command = ["-m", "benchtools.roles", "--json", "--figure", args.figure, "--tasks", str(args.tasks)]
    command += ["--rounds", str(args.rounds)] + ([] if args.transport is None else ["--transport", args.transport])
    root = Path(__file__).resolve().parent.parent
    out: list[list[dict[str, float]]] = [[] for _ in pythons]
    for _ in range(args.runs):
        for i, python in enumerate(pythons):
            done = subprocess.run(
                [python, *command], cwd=root, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
            )
            if done.returncode != 0:
                raise SystemExit(f"benchtools.roles under {python} failed:\n{done.stderr[-2000:]}")
            out[i].append(json.loads(done.stdout.splitlines()[-1]))
    return out


def table(names: list[str], runs: list[list[dict[str, float]]], unit: str) -> str:
    """Each figure's median over runs per build, and each build's ratio to the first."""
    keys = list(runs[0][0])
    medians = [{key: statistics.median(run[key] for run in build) for key in keys} for build in runs]
    lines = [f"{unit}; median of {len(runs[0])} run(s) each" + ("; ratio to the first" if len(names) > 1 else "")]
    lines.append(f"{'':20}" + "".join(f"{name[:24]:>26}" for name in names))
    for key in keys:
        cells = []
        for i, build in enumerate(medians):
            ratio = f" ({build[key] / medians[0][key]:.2f}x)" if i and medians[0][key] else ""
            cells.append(f"{build[key]:>14.2f}{ratio:>12}")
        lines.append(f"{key:20}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--figure", choices=("map", "job"), default="map", help="a map, or 10-task maps one at a time")
    parser.add_argument("--tasks", type=int, help="tasks per round (default: 40,000 for map, 4,000 for job)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per run on one cluster (medians)")
    parser.add_argument("--runs", type=int, default=1, help="with --pythons: runs under each, alternating")
    parser.add_argument("--pythons", help="comma list of pythons (builds) to run alternately; default: this one")
    parser.add_argument("--transport", choices=("tcp", "unix"), help="the cluster's links (default: its own)")
    parser.add_argument("--json", action="store_true", help="print this build's figures as one JSON line")
    args = parser.parse_args(argv)
    if args.tasks is None:
        args.tasks = DEFAULT_TASKS[args.figure]
    if args.tasks < JOB_SIZE or args.rounds < 1 or args.runs < 1:
        parser.error(f"--tasks must be >= {JOB_SIZE}, --rounds and --runs >= 1")
    unit = f"per {'10-task job' if args.figure == 'job' else 'task'} ({args.figure}, {args.tasks:,} tasks a round)"
    if args.pythons:
        named = [entry.partition("=") for entry in args.pythons.split(",")]
        names = [name if python else f"build {i + 1}" for i, (name, _, python) in enumerate(named)]
        pythons = [python or name for name, _, python in named]
        print(table(names, _alternate(pythons, args), unit))
        return
    figures = measure(args.figure, args.tasks, args.rounds, args.transport)
    print(json.dumps(figures) if args.json else table(["this build"], [[figures]], unit))


if __name__ == "__main__":
    main()
