"""Benchmarks at the user's door: SparrowExecutor driven as a user drives it, with functions defined in this
script's own `__main__` (cloudpickle ships them by value; a process pool's children import them by name) and
builtins beside them, each figure beside a `ProcessPoolExecutor(2)` and loky's reusable executor (joblib's
default) in the same run. The systems alternate figure by figure, the first one rotating each round, so that a
shared machine's noise hits all alike. Sparrow: a LocalCluster of 1 scheduler + 2 node monitors x 1 slot.

Figures (per system; the ratio Sparrow/pool beside each):
- map, map_builtin: `list(ex.map(f, range(N)))`, tasks/s, `f` from `__main__` / `int`;
- submit: `[ex.submit(f, i) for i in range(N)]`, waited for, tasks/s;
- callbacks: jobs of 10 (`submit_many` on Sparrow, `submit` per task elsewhere), `add_done_callback` on each
  future, until the last callback ran, tasks/s;
- *_cpu: CPU microseconds per task of those four (this process and the system's own processes);
- job_p50, job_p50_builtin: one `list(ex.map(f, range(10)))` at a time, p50 ms;
- ms_busy: `map` of 1 ms sleeps over 2 slots, the share of the nominal 2,000 tasks/s reached;
- dask, dask_p50: `dask.compute` of N `dask.delayed(f)(i)` (tasks/s) and of 10 of them (p50 ms), `f` from
  `__main__`: on Sparrow through `DaskScheduler`, elsewhere Dask's own "processes" scheduler over the same pool
  (`scheduler="processes", pool=...`, what a Dask user on one host picks); left out without dask;
- load80, load70: 10-task jobs of 10 ms at Poisson arrivals (user_load.py), p50 of (response - 10 ms) over the
  floor's (nominal durations, no overhead, the same for every system); on Sparrow also through its async Client.

    python -m benchtools.users --rounds 3
    python -m benchtools.users --rounds 1 --json      # one JSON line, with versus_pool (bench/bench_users.py reads it)
    python -m benchtools.users --systems sparrow,pool --figures load80,load70 --load-seconds 20
    python -m benchtools.users --systems sparrow,pool --figures map,job_p50 --transport tcp   # links over TCP
    python -m benchtools.users --systems sparrow,pool --figures ms_busy,load80 --share-cpus   # nothing pinned
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass

from bench.bench_vs_pool import child_pids, process_cpu_seconds, tree_cpu_seconds
from benchtools import user_load
from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor

try:
    from joblib.externals.loky import get_reusable_executor
except ImportError:  # joblib is optional (pip install -e '.[peers]'): the runs then leave loky out
    get_reusable_executor = None

try:
    import dask

    from sparrow_runtime.dask import DaskScheduler
except ImportError:  # dask is optional (pip install -e '.[dask]'): the runs then leave its figures out
    dask = None

SLOTS = 2
JOB_SIZE = 10
MS_TASK_S = 0.001


def square(x: int) -> int:
    """A user's no-op, defined in the script: `__main__.square` when it runs as one."""
    return x * x


def nap(seconds: float) -> None:
    """A user's sleeping task, defined in the script (the builtin beside it: time.sleep)."""
    time.sleep(seconds)


@dataclass(frozen=True)
class Sizes:
    """What one round measures on each system."""

    map_tasks: int = 10_000
    submit_tasks: int = 2_000
    callback_tasks: int = 2_000
    latency_jobs: int = 50
    ms_tasks: int = 4_000
    dask_tasks: int = 2_000
    load_seconds: float = 10.0


FIGURES = (
    "map",
    "map_builtin",
    "submit",
    "callbacks",
    "job_p50",
    "job_p50_builtin",
    "ms_busy",
    "dask",
    "dask_p50",
    "load80",
    "load70",
)
LOADS = {"load80": 0.8, "load70": 0.7}
SYSTEMS = ("sparrow", "pool", "loky")


@dataclass
class System:
    """An executor a user could pick, and the processes it started (whose CPU is its own)."""

    executor: Executor
    pids: set[int]
    cluster: LocalCluster | None = None
    dask_options: dict | None = None  # dask.compute's keywords that run a graph on this system

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(os.getpid()) + tree_cpu_seconds(self.pids)


@contextlib.contextmanager
def started(names: list[str], transport: str | None = None, share_cpus: bool = False) -> Iterator[dict[str, System]]:
    """Each named system, started and warmed up (its workers and connections ready); `transport`: Sparrow's
    links (None: LocalCluster's default); `share_cpus`: its services on every CPU, not pinned."""
    with contextlib.ExitStack() as stack:
        systems: dict[str, System] = {}
        for name in sorted(names, key=lambda n: n == "sparrow"):  # the pool forks before the executor's thread runs
            before = child_pids()
            cluster = None
            if name == "sparrow":
                cluster = stack.enter_context(
                    LocalCluster(
                        node_monitor=NodeMonitorConfig(executor="process"),
                        schedulers=1,
                        node_monitors=SLOTS,
                        slots=1,
                        dashboard=False,
                        **({} if transport is None else {"transport": transport}),
                        **({"share_cpus": True} if share_cpus else {}),
                    )
                )
                executor: Executor = stack.enter_context(SparrowExecutor(cluster.schedulers, secret=cluster.secret))
            elif name == "pool":
                executor = stack.enter_context(ProcessPoolExecutor(SLOTS))
            else:
                assert get_reusable_executor is not None
                executor = get_reusable_executor(max_workers=SLOTS)
                stack.callback(executor.shutdown)
            list(executor.map(square, range(100)))  # every worker started
            system = System(executor, child_pids() - before, cluster)
            if dask is not None and cluster is not None:
                system.dask_options = {"scheduler": stack.enter_context(DaskScheduler(cluster))}
            elif dask is not None:
                system.dask_options = {"scheduler": "processes", "pool": executor}
            systems[name] = system
        yield {name: systems[name] for name in names}


def _throughput(figure: str, ex: Executor, tasks: int) -> tuple[float, int]:
    """(seconds, tasks) of one throughput figure on `ex`."""
    start = time.perf_counter()
    if figure == "map":
        assert list(ex.map(square, range(tasks))) == [x * x for x in range(tasks)]
    elif figure == "map_builtin":
        list(ex.map(int, range(tasks)))
    elif figure == "submit":
        wait([ex.submit(square, i) for i in range(tasks)])
    else:
        _callbacks(ex, tasks)
    return time.perf_counter() - start, tasks


def _callbacks(ex: Executor, tasks: int) -> None:
    """`tasks` squares in jobs of JOB_SIZE, a done-callback on each future; returns once every callback ran."""
    left = [tasks]
    lock, done = threading.Lock(), threading.Event()

    def on_done(_future: Future) -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()

    for start in range(0, tasks, JOB_SIZE):
        for future in user_load.submit_job(ex, square, list(range(start, min(tasks, start + JOB_SIZE)))):
            future.add_done_callback(on_done)
    if not done.wait(600):
        raise RuntimeError(f"{left[0]} of {tasks} callbacks never ran")


def _job_p50_ms(ex: Executor, fn: Callable, jobs: int) -> float:
    latencies = []
    for _ in range(jobs):
        start = time.perf_counter()
        list(ex.map(fn, range(JOB_SIZE)))
        latencies.append(time.perf_counter() - start)
    return 1e3 * statistics.median(latencies)


def _dask_graph(system: System, tasks: int) -> None:
    """`dask.compute` of `tasks` independent calls of `square` on `system`."""
    assert system.dask_options is not None
    out = dask.compute(*[dask.delayed(square, pure=False)(i) for i in range(tasks)], **system.dask_options)
    assert list(out) == [i * i for i in range(tasks)]


def measure(figure: str, system: System, sizes: Sizes, seed: int) -> dict[str, float]:
    """One figure on one system: its value (and, for throughputs, `<figure>_cpu` in us per task)."""
    ex = system.executor
    if figure in ("map", "map_builtin", "submit", "callbacks"):
        tasks = {"submit": sizes.submit_tasks, "callbacks": sizes.callback_tasks}.get(figure, sizes.map_tasks)
        cpu = system.cpu_seconds()
        seconds, tasks = _throughput(figure, ex, tasks)
        return {figure: tasks / seconds, f"{figure}_cpu": 1e6 * (system.cpu_seconds() - cpu) / tasks}
    if figure in ("job_p50", "job_p50_builtin"):
        return {figure: _job_p50_ms(ex, square if figure == "job_p50" else int, sizes.latency_jobs)}
    if figure in ("dask", "dask_p50"):
        if system.dask_options is None:
            return {}
        if figure == "dask":
            start = time.perf_counter()
            _dask_graph(system, sizes.dask_tasks)
            return {figure: sizes.dask_tasks / (time.perf_counter() - start)}
        latencies = []
        for _ in range(sizes.latency_jobs):
            start = time.perf_counter()
            _dask_graph(system, JOB_SIZE)
            latencies.append(time.perf_counter() - start)
        return {figure: 1e3 * statistics.median(latencies)}
    if figure == "ms_busy":
        start = time.perf_counter()
        list(ex.map(nap, [MS_TASK_S] * sizes.ms_tasks))
        return {figure: sizes.ms_tasks * MS_TASK_S / SLOTS / (time.perf_counter() - start)}
    load = user_load.Load(LOADS[figure], SLOTS, sizes.load_seconds, seed)
    arrivals = load.arrivals()
    floor = user_load.beyond_task_ms(load.floor(arrivals))
    out = {figure: user_load.beyond_task_ms(user_load.executor_load(ex, nap, arrivals)) / floor}
    if system.cluster is not None:
        client = user_load.beyond_task_ms(user_load.client_load(system.cluster, nap, arrivals))
        out[f"{figure}_client"] = client / floor
    return out


def run(
    names: list[str],
    figures: list[str],
    sizes: Sizes,
    rounds: int,
    transport: str | None = None,
    share_cpus: bool = False,
) -> list[dict[str, dict[str, float]]]:
    """Per round, per system, its figures: each figure on every system in turn, the first system rotating."""
    out = []
    with started(names, transport, share_cpus) as systems:
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            figures_of: dict[str, dict[str, float]] = {name: {} for name in names}
            for figure in figures:
                for name in order:
                    figures_of[name].update(measure(figure, systems[name], sizes, seed=r))
            out.append(figures_of)
    return out


HIGHER_IS_BETTER = {"map", "map_builtin", "submit", "callbacks", "ms_busy", "dask"}


def summary(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per system, each figure's median over the rounds."""
    out: dict[str, dict[str, float]] = {}
    for system in rounds[0]:
        keys = dict.fromkeys(k for r in rounds for k in r[system])  # in the order measured
        out[system] = {k: statistics.median(r[system][k] for r in rounds if k in r[system]) for k in keys}
    return out


def versus_pool(summed: dict[str, dict[str, float]]) -> dict[str, float]:
    """Sparrow's cost over the pool's per figure, lower is better (as asv assumes): time per task for the
    rates, the ratio itself for latencies and CPU; ms_busy: nominal over reached; the loads over the floor
    (already ratios, the pool's beside them under `<load>_pool`); the executor's load over the async Client's."""
    ours, pool = summed["sparrow"], summed["pool"]
    out: dict[str, float] = {}
    for key, value in ours.items():
        if key in LOADS or key.endswith("_client"):
            out[key] = value
        elif key == "ms_busy":
            out[key] = 1 / value
        elif key in pool:
            out[key] = pool[key] / value if key in HIGHER_IS_BETTER else value / pool[key]
    for key in LOADS:
        if key in pool:
            out[f"{key}_pool"] = pool[key]
        if f"{key}_client" in ours:
            out[f"{key}_executor_vs_client"] = ours[key] / ours[f"{key}_client"]
    return out


def _format(key: str, value: float) -> str:
    if key in HIGHER_IS_BETTER - {"ms_busy"}:
        return f"{value:,.0f}/s"
    if key == "ms_busy":
        return f"{100 * value:.0f}%"
    if key.endswith("_cpu"):
        return f"{value:.0f} us"
    if key.startswith("job_p50") or key == "dask_p50":
        return f"{value:.2f} ms"
    return f"{value:.2f}x floor"


def report(rounds: list[dict[str, dict[str, float]]], figures: list[str]) -> str:
    """The table a user reads: per figure each system's median over the rounds, and Sparrow over the pool."""
    summed = summary(rounds)
    lines = []
    keys = [k for f in figures for k in (f, f"{f}_cpu", f"{f}_client") if any(k in s for s in summed.values())]
    for key in keys:
        cells = "  ".join(f"{name} {_format(key, figs[key])}" for name, figs in summed.items() if key in figs)
        lines.append(f"{key:<16} {cells}")
    if "sparrow" in summed and "pool" in summed:
        ratios = versus_pool(summed)
        lines.append("Sparrow's cost over the pool's (lower is better; loads: over the floor):")
        lines.extend(f"  {key:<28} {value:.2f}x" for key, value in ratios.items())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each: every figure on every system in turn")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma list of {', '.join(SYSTEMS)}")
    parser.add_argument("--figures", default=",".join(FIGURES), help=f"comma list of {', '.join(FIGURES)}")
    for field, default in asdict(Sizes()).items():
        parser.add_argument(f"--{field.replace('_', '-')}", type=type(default), default=default, help="per round")
    parser.add_argument("--json", action="store_true", help="print the rounds as one JSON line")
    parser.add_argument(
        "--transport", choices=("tcp", "unix"), help="Sparrow's links (default: LocalCluster's, unix where it can)"
    )
    parser.add_argument(
        "--share-cpus", action="store_true", help="Sparrow's services on every CPU, not one node monitor per CPU"
    )
    args = parser.parse_args(argv)
    sizes = Sizes(**{field: getattr(args, field) for field in asdict(Sizes())})
    if args.rounds < 1 or min(asdict(sizes).values()) <= 0:
        parser.error("--rounds and every size must be >= 1 (--load-seconds > 0)")
    names, figures = args.systems.split(","), args.figures.split(",")
    for given, known, flag in ((names, SYSTEMS, "--systems"), (figures, FIGURES, "--figures")):
        unknown = sorted(set(given) - set(known))
        if unknown:
            parser.error(f"{flag}: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    if "loky" in names and get_reusable_executor is None:
        print("loky left out: joblib is not installed (pip install -e '.[peers]')", file=sys.stderr)
        names.remove("loky")
    load_before = os.getloadavg()[0]
    rounds = run(names, figures, sizes, args.rounds, args.transport, args.share_cpus)
    if args.json:
        out: dict = {"module": square.__module__, "rounds": rounds}
        if {"sparrow", "pool"} <= set(names):
            out["versus_pool"] = versus_pool(summary(rounds))
        print(json.dumps(out))
        return
    print(
        f"{args.rounds} rounds, {', '.join(names)} alternating; functions from {square.__module__}; "
        f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}; median over rounds"
    )
    print(report(rounds, figures))


if __name__ == "__main__":
    main()
