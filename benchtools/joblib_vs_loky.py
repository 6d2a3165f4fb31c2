"""joblib on Sparrow against joblib's default backend (loky) on the same cores, as a scikit-learn user runs it:
functions defined in this script's own `__main__`, the same Parallel calls, the two backends alternating run by
run (the first one rotating each round) so that a shared machine's noise hits both alike. Sparrow: a
LocalCluster of 1 scheduler + 2 node monitors x 1 slot (process executors); loky: `n_jobs=2`. Each backend runs
every workload once untimed first (loky starts its workers, the node monitors' workers import scikit-learn).

Workloads (wall seconds per run; the ratio loky/Sparrow: over 1, Sparrow is faster):
- tiny: `Parallel(n_jobs)(delayed(f)(i) for i in range(10_000))`, `f` a no-op of `__main__`;
- grid: `GridSearchCV(LogisticRegression(max_iter=200), 8 values of C, cv=5)` on scikit-learn's bundled digits
  (40 small fits; the training set is scattered once on Sparrow).

    python -m benchtools.joblib_vs_loky --repeat 5
    python -m benchtools.joblib_vs_loky --repeat 5 --workloads tiny --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

WORKLOADS = ("tiny", "grid")
BACKENDS = ("sparrow", "loky")
N_JOBS = 2


def noop(i: int) -> int:
    """A user's tiny task, defined in the script: `__main__.noop` when it runs as one."""
    return i


def tiny(n_jobs: int) -> None:
    from joblib import Parallel, delayed

    Parallel(n_jobs=n_jobs)(delayed(noop)(i) for i in range(10_000))


def grid(n_jobs: int) -> None:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    X, y = load_digits(return_X_y=True)
    search = GridSearchCV(LogisticRegression(max_iter=200), {"C": [0.001, 0.01, 0.1, 0.3, 1, 3, 10, 30]}, cv=5)
    search.n_jobs = n_jobs
    search.fit(X / 16.0, y)


RUNS: dict[str, Callable[[int], None]] = {"tiny": tiny, "grid": grid}


def measure(workloads: list[str], repeat: int) -> dict[str, dict[str, list[float]]]:
    """Seconds of each run, by workload then backend."""
    import warnings

    import joblib

    import sparrow_runtime.joblib  # noqa: F401 (registers the backend "sparrow")
    from sparrow_runtime import LocalCluster, SparrowExecutor

    times: dict[str, dict[str, list[float]]] = {w: {b: [] for b in BACKENDS} for w in workloads}
    with (
        LocalCluster(node_monitors=N_JOBS, slots=1, dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, **cluster.credentials) as executor,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # scikit-learn's convergence warnings at small C

        def run(backend: str, workload: str) -> float:
            config = dict(backend="sparrow", cluster=executor) if backend == "sparrow" else dict(backend="loky")
            with joblib.parallel_config(**config):
                start = time.perf_counter()
                RUNS[workload](N_JOBS)
                return time.perf_counter() - start

        for workload in workloads:
            for backend in BACKENDS:
                run(backend, workload)  # warm-up, untimed
        for r in range(repeat):
            order = BACKENDS if r % 2 == 0 else BACKENDS[::-1]
            for workload in workloads:
                for backend in order:
                    times[workload][backend].append(run(backend, workload))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m benchtools.joblib_vs_loky")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each backend per workload (default 5)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    parser.add_argument("--json", action="store_true", help="one JSON line of every run's seconds")
    args = parser.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown or args.repeat < 1:
        parser.error(f"unknown workloads {unknown}" if unknown else "--repeat must be >= 1")
    times = measure(workloads, args.repeat)
    if args.json:
        print(json.dumps(times))
        return 0
    print(f"{'workload':<8} {'sparrow s (median, best)':>26} {'loky s (median, best)':>24} {'loky/sparrow':>13}")
    for workload, by_backend in times.items():
        sparrow, loky = (statistics.median(by_backend[b]) for b in BACKENDS)
        best_s, best_l = min(by_backend["sparrow"]), min(by_backend["loky"])
        print(f"{workload:<8} {sparrow:>15.3f} {best_s:>10.3f} {loky:>13.3f} {best_l:>10.3f} {loky / sparrow:>12.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
