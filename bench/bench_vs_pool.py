"""The runtime against a ProcessPoolExecutor(2) in the same run: what a
`concurrent.futures` user compares Sparrow with, and the figures `python -m benchtools.gate` holds.

A LocalCluster of 1 scheduler + 2 node monitors x 1 slot (process executors) on loopback, driven
through the synchronous `SparrowExecutor`, beside `ProcessPoolExecutor(2)`, the two alternating in
each round (Sparrow, pool, Sparrow, pool, ...) so that a shared machine's load hits both alike:

- map: `list(ex.map(int, range(MAP_TASKS)))`, tasks/s;
- submit loop: `[ex.submit(int, i) for i in range(SUBMIT_TASKS)]`, waited for, tasks/s;
- 10-task job: `list(ex.map(int, range(10)))` one at a time, p50 of its latency;
- 80%-load overhead: bench/open_loop.py's run (10-task jobs of 10 ms at 80% of the 2 slots), the
  runtime's p50 of (job response - 10 ms) over the zero-overhead floor's for the same arrivals.

Each figure is a ratio of Sparrow's time to the baseline's (lower is better, as asv assumes; 1.0 =
as fast as the pool), the median over ROUNDS rounds of one run. asv: `RuntimeVsPool.track_*`.
Script: `python bench/bench_vs_pool.py [--rounds N] [--json]` prints the rates, latencies and
ratios of one run; `--python PY` (repeatable) runs the same measurement under other interpreters
(other builds of the package, e.g. a worktree of an old commit with its own venv), alternating them
round by round, and prints each build's figures side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, wait
from functools import partial

try:
    from bench import open_loop
    from bench.cluster_options import cluster_options
except ModuleNotFoundError:  # run as `python bench/bench_vs_pool.py`: bench/ is on sys.path, its parent is not
    import open_loop
    from cluster_options import cluster_options

try:
    from sparrow_runtime import LocalCluster, SparrowExecutor
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None

SLOTS = 2
MAP_TASKS = 500  # per round
SUBMIT_TASKS = 200
JOBS = 10  # 10-task jobs, one at a time
JOB_SIZE = 10
ROUNDS = 10

# Each gated figure, Sparrow's over the pool's (lower is better): the map's and the submit loop's time
# per task, the 10-task job's p50, and the CPU seconds per task of every process involved (this one and
# the cluster's or the pool's), which a busy machine moves less than wall time.
FIGURES = ("map", "submit", "job_p50", "map_cpu", "submit_cpu", "job_cpu")


def tree_cpu_seconds(roots: Iterable[int] | None = None) -> float:
    """CPU seconds of the processes `roots` (default: this one) and every live descendant of theirs, all their
    threads (Linux: schedstat in ns, else the clock ticks of stat; 0.0 without /proc)."""
    parents = _children_by_parent()
    total, todo = 0.0, [os.getpid()] if roots is None else list(roots)
    while todo:
        pid = todo.pop()
        total += process_cpu_seconds(pid)
        todo.extend(parents.get(pid, ()))
    return total


def child_pids() -> set[int]:
    """The live children of this process."""
    return set(_children_by_parent().get(os.getpid(), ()))


def _children_by_parent() -> dict[int, list[int]]:
    parents: dict[int, list[int]] = {}
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return parents
    for pid in entries:
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents.setdefault(int(f.read().rpartition(")")[2].split()[1]), []).append(pid)
        except OSError:
            continue  # ended meanwhile
    return parents


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds of process `pid`, all its threads (0.0 if it is gone)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
        ns = 0
        for tid in threads:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
        return ns / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _timed(work) -> tuple[float, float, list[float]]:
    """(wall seconds, CPU seconds of the process tree) of `work()`, and what it returned."""
    cpu, start = tree_cpu_seconds(), time.perf_counter()
    out = work()
    return time.perf_counter() - start, tree_cpu_seconds() - cpu, out


def _jobs(ex, jobs: int) -> list[float]:
    latencies = []
    for _ in range(jobs):
        start = time.perf_counter()
        list(ex.map(int, range(JOB_SIZE)))
        latencies.append(time.perf_counter() - start)
    return latencies


def one_round(executors: dict, map_tasks: int, submit_tasks: int, jobs: int) -> dict[str, dict]:
    """Each figure on each executor in turn (Sparrow, pool, then the next figure), so that both see the
    same moments of a shared machine: per executor, seconds and CPU seconds per figure, the latencies."""
    out: dict[str, dict] = {name: {} for name in executors}
    for figure, tasks, work in (
        ("map", map_tasks, lambda ex: list(ex.map(int, range(map_tasks)))),
        ("submit", submit_tasks, lambda ex: wait([ex.submit(int, i) for i in range(submit_tasks)])),
        ("job", jobs * JOB_SIZE, lambda ex: _jobs(ex, jobs)),
    ):
        for name, ex in executors.items():
            wall, cpu, result = _timed(partial(work, ex))
            out[name].update({f"{figure}_s": wall, f"{figure}_cpu_s": cpu, f"{figure}_tasks": tasks})
            if figure == "job":
                out[name]["latencies"] = result
    return out


def ratios(rounds: list[dict[str, dict]]) -> dict[str, float]:
    """Sparrow's time over the pool's per figure, over all `rounds` together (lower is better)."""

    def total(side: str, key: str) -> float:
        return sum(r[side][key] for r in rounds)

    out = {}
    for figure in ("map", "submit", "job"):
        per_task = {
            side: total(side, f"{figure}_cpu_s") / total(side, f"{figure}_tasks") for side in ("sparrow", "pool")
        }
        out[f"{figure}_cpu"] = per_task["sparrow"] / per_task["pool"]
        if figure != "job":
            out[figure] = total("sparrow", f"{figure}_s") / total("pool", f"{figure}_s")
    p50 = {side: statistics.median(x for r in rounds for x in r[side]["latencies"]) for side in ("sparrow", "pool")}
    out["job_p50"] = p50["sparrow"] / p50["pool"]
    return out


def run_rounds(
    rounds: int = ROUNDS,
    transport: str | None = None,
    pipeline_depth: int | None = None,
    bind_idle: bool | None = None,
    **sizes: int,
) -> list[dict[str, dict]]:
    """`rounds` rounds on one cluster and one pool, each figure alternating the two (one_round);
    `transport`: the cluster's links (None: the build's default); `pipeline_depth`: the cluster's node monitors'
    pipelining (bench_runtime.pipelining: None the build's default,
    0 off, N deep); `bind_idle`: its scheduler's (None: the build's default)."""
    sizes = {"map_tasks": MAP_TASKS, "submit_tasks": SUBMIT_TASKS, "jobs": JOBS, **sizes}
    options: dict = {} if transport is None else {"transport": transport}
    options.update(cluster_options("process", pipeline_depth, bind_idle))
    with (
        LocalCluster(schedulers=1, node_monitors=SLOTS, slots=1, **options) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
        ProcessPoolExecutor(SLOTS) as pool,
    ):
        executors = {"sparrow": ex, "pool": pool}
        for executor in executors.values():
            list(executor.map(int, range(JOB_SIZE * 10)))  # warm up: workers, connections
        return [one_round(executors, **sizes) for _ in range(rounds)]


def load_ratio() -> float:
    """The 80%-load case: the runtime's p50 of (response - task) over the floor's (bench/open_loop.py)."""
    runtime, floor = open_loop.run_on_local_cluster(open_loop.LoadSpec()).beyond_task_ms(50)
    return runtime / floor


class RuntimeVsPool:
    """Sparrow's time over a ProcessPoolExecutor(2)'s (or the zero-overhead floor's), measured in the
    same run: the runtime figures the regression gate holds (benchtools/gate.py)."""

    timeout = 300

    def setup_cache(self) -> dict[str, float | str]:
        if LocalCluster is None:  # not None: asv would then call setup without the cache
            return {"unavailable": "sparrow_runtime has no LocalCluster / SparrowExecutor"}
        figures: dict[str, float | str] = dict(ratios(run_rounds()))
        try:
            figures["load"] = load_ratio()
        except NotImplementedError as missing:
            figures["load_unavailable"] = str(missing)
        return figures

    def setup(self, figures: dict[str, float | str]) -> None:
        if "unavailable" in figures:
            raise NotImplementedError(figures["unavailable"])

    def track_map_time_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["map"]

    track_map_time_vs_pool.unit = "ratio"

    def track_submit_time_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["submit"]

    track_submit_time_vs_pool.unit = "ratio"

    def track_job_p50_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["job_p50"]

    track_job_p50_vs_pool.unit = "ratio"

    def track_map_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["map_cpu"]

    track_map_cpu_vs_pool.unit = "ratio"

    def track_submit_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["submit_cpu"]

    track_submit_cpu_vs_pool.unit = "ratio"

    def track_job_cpu_vs_pool(self, figures: dict[str, float]) -> float:
        return figures["job_cpu"]

    track_job_cpu_vs_pool.unit = "ratio"

    def track_load_overhead_vs_floor(self, figures: dict[str, float | str]) -> float:
        if "load_unavailable" in figures:
            raise NotImplementedError(figures["load_unavailable"])
        return figures["load"]

    track_load_overhead_vs_floor.unit = "ratio"


def absolute(rounds: list[dict[str, dict]], side: str) -> dict[str, float]:
    """One executor's figures over `rounds`: tasks/s of the map and the submit loop, the 10-task job's
    p50 in ms, and CPU microseconds per task of each."""

    def total(key: str) -> float:
        return sum(r[side][key] for r in rounds)

    out = {f: total(f"{f}_tasks") / total(f"{f}_s") for f in ("map", "submit")}
    out["job_p50"] = 1e3 * statistics.median(x for r in rounds for x in r[side]["latencies"])
    out.update({f"{f}_cpu": 1e6 * total(f"{f}_cpu_s") / total(f"{f}_tasks") for f in ("map", "submit", "job")})
    return out


def _span(values: list[float], fmt: str) -> str:
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def _children(pythons: list[str], args: argparse.Namespace) -> list[list[list[dict]]]:
    """Per interpreter, its blocks of rounds: `--repeat` child `--json` runs each (a fresh cluster and
    pool each), the interpreters alternating."""
    per_python: list[list[list[dict]]] = [[] for _ in pythons]
    for _ in range(args.repeat):
        for i, python in enumerate(pythons):
            command = [
                python,
                os.path.abspath(__file__),
                "--json",
                "--rounds",
                str(args.rounds),
                "--map-tasks",
                str(args.map_tasks),
                "--submit-tasks",
                str(args.submit_tasks),
                "--jobs",
                str(args.jobs),
            ]
            if args.transport is not None:
                command += ["--transport", args.transport]
            if args.pipeline_depth is not None:
                command += ["--pipeline-depth", str(args.pipeline_depth)]
            if args.bind_idle is not None:
                command.append("--bind-idle" if args.bind_idle else "--no-bind-idle")
            out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=900).stdout
            per_python[i].append(json.loads(out.splitlines()[-1]))
    return per_python


ROWS = (  # figure, label, format, Sparrow/pool shown as a rate ratio (higher is better)?
    ("map", "map tasks/s", "{:,.0f}", True),
    ("submit", "submit-loop tasks/s", "{:,.0f}", True),
    ("job_p50", "10-task job p50 ms", "{:.2f}", False),
    ("map_cpu", "map CPU us/task", "{:.0f}", False),
    ("submit_cpu", "submit CPU us/task", "{:.0f}", False),
    ("job_cpu", "10-task job CPU us/task", "{:.0f}", False),
)


def print_build(name: str, blocks: list[list[dict]]) -> None:
    """The figures of one build: each block's (a run's) over its rounds; median (range) over blocks."""
    print(f"{name}:")
    per_block = [(absolute(b, "sparrow"), absolute(b, "pool"), ratios(b)) for b in blocks]
    for figure, label, fmt, rate in ROWS:
        ours = [s[figure] for s, _, _ in per_block]
        theirs = [p[figure] for _, p, _ in per_block]
        ratio = [1 / r[figure] if rate else r[figure] for _, _, r in per_block]
        print(
            f"  {label:<24} Sparrow {_span(ours, fmt)}  pool {_span(theirs, fmt)}  "
            f"Sparrow/pool {_span(ratio, '{:.2f}x')}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds per run, each figure alternating the two")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each on a fresh cluster and pool")
    parser.add_argument("--map-tasks", type=int, default=MAP_TASKS, help="per round")
    parser.add_argument("--submit-tasks", type=int, default=SUBMIT_TASKS, help="per round")
    parser.add_argument("--jobs", type=int, default=JOBS, help="10-task jobs per round")
    parser.add_argument("--load", action="store_true", help="also the 80%%-load p50 over the floor's, per run")
    parser.add_argument(
        "--transport", choices=("tcp", "unix"), help="LocalCluster's links (default: the build's, unix where it can)"
    )
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        metavar="N",
        help="pipelined late binding N deep on the node monitors (LocalCluster(pipeline_depth=N)); "
        "0: off (LocalCluster(pipeline='off')); default: the build's (steady, 16 deep)",
    )
    parser.add_argument(
        "--bind-idle",
        action=argparse.BooleanOptionalAction,
        help="the scheduler binds a small job's tasks to idle node monitors with its reservations "
        "(its SchedulerConfig, or LocalCluster(bind_idle=...) on older builds); default: the build's",
    )
    parser.add_argument("--json", action="store_true", help="print the rounds of one run as one JSON line")
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="run under this interpreter too (repeatable), alternating with this one",
    )
    args = parser.parse_args()
    if min(args.rounds, args.repeat, args.map_tasks, args.submit_tasks, args.jobs) < 1:
        parser.error("--rounds, --repeat, --map-tasks, --submit-tasks and --jobs must be >= 1")
    if args.pipeline_depth is not None and args.pipeline_depth < 0:
        parser.error("--pipeline-depth must be >= 0")
    if LocalCluster is None:
        parser.exit(2, "bench_vs_pool.py needs sparrow_runtime: pip install -e .\n")
    sizes = {"map_tasks": args.map_tasks, "submit_tasks": args.submit_tasks, "jobs": args.jobs}
    if args.json:
        print(json.dumps(run_rounds(args.rounds, args.transport, args.pipeline_depth, args.bind_idle, **sizes)))
        return
    load_before = os.getloadavg()[0]
    pythons = [sys.executable, *args.python]
    if args.python or args.repeat > 1:
        builds = _children(pythons, args)
    else:
        builds = [[run_rounds(args.rounds, args.transport, args.pipeline_depth, args.bind_idle, **sizes)]]
    loads = [load_ratio() for _ in range(args.repeat)] if args.load else []
    print(
        f"per round: {args.map_tasks:,}-task map, {args.submit_tasks:,} submits, {args.jobs} 10-task jobs; "
        f"{args.rounds} rounds per run, {args.repeat} runs"
        + ("" if args.pipeline_depth is None else f", pipeline depth {args.pipeline_depth or 'off'}")
        + ("" if args.bind_idle is None else f", bind idle {'on' if args.bind_idle else 'off'}")
        + (", builds alternating" if args.python else "")
        + f"; median (range) over runs; load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    for python, blocks in zip(pythons, builds, strict=True):
        print_build(python, blocks)
    if loads:
        print(f"80%-load p50 of (response - 10 ms), runtime / floor ({sys.executable}): {_span(loads, '{:.2f}x')}")


if __name__ == "__main__":
    main()
