"""benchtools/users.py and user_load.py, the benchmarks at the user's door, and their asv rows (bench/bench_users.py):
the floor is a zero-overhead central queue over the nominal durations, a run measures every figure on every
system with the script's own functions, the rows and the gate read its figures, and bad arguments are refused."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from bench import bench_users
from benchtools import gate, user_load, users
from benchtools.asv_project import REPOSITORY

TINY = ["--map-tasks", "40", "--submit-tasks", "20", "--callback-tasks", "20", "--latency-jobs", "3"]
TINY += ["--ms-tasks", "20", "--dask-tasks", "20", "--load-seconds", "0.5"]


def test_the_floor_runs_a_job_on_both_slots_without_overhead() -> None:
    """One job of 10 x 10 ms alone on 2 slots ends after 5 task lengths; a second arriving with it waits for the
    first (FIFO): 10 task lengths."""
    load = user_load.Load(0.8, 2, 1.0)
    alone = load.floor(np.array([0.0]))
    together = load.floor(np.array([0.0, 0.0]))
    assert alone == pytest.approx([5 * user_load.TASK_S])
    assert together == pytest.approx([5 * user_load.TASK_S, 10 * user_load.TASK_S])


def test_the_arrivals_offer_the_load_and_are_the_same_for_every_system() -> None:
    """Poisson arrivals at 80% of 2 slots are 16 jobs/s (within the noise of 200 s), and a seed gives the same."""
    load = user_load.Load(0.8, 2, 200.0, seed=3)
    arrivals = load.arrivals()
    assert len(arrivals) / 200.0 == pytest.approx(16, rel=0.1)
    assert np.array_equal(arrivals, user_load.Load(0.8, 2, 200.0, seed=3).arrivals())
    assert (np.diff(arrivals) > 0).all() and arrivals[-1] < 200.0


def test_a_load_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="0 < load < 1"):
        user_load.Load(1.0, 2, 1.0).arrivals()


def test_versus_pool_is_the_cost_over_the_pool_lower_better() -> None:
    """A Sparrow twice the pool's rate costs 0.5x; a p50 twice the pool's 2x; 90% busy is 1/0.9 of nominal; a
    load stays its ratio to the floor and the executor is compared with the Client."""
    ours = {"map": 2000.0, "map_cpu": 50.0, "job_p50": 4.0, "ms_busy": 0.9, "load80": 1.2, "load80_client": 1.0}
    pool = {"map": 1000.0, "map_cpu": 100.0, "job_p50": 2.0, "ms_busy": 0.8, "load80": 1.1}
    summed = {"sparrow": ours, "pool": pool}
    ratios = users.versus_pool(summed)
    assert ratios["map"] == 0.5 and ratios["map_cpu"] == 0.5 and ratios["job_p50"] == 2.0
    assert ratios["ms_busy"] == pytest.approx(1 / 0.9)
    assert ratios["load80"] == 1.2 and ratios["load80_pool"] == 1.1
    assert ratios["load80_executor_vs_client"] == pytest.approx(1.2)


def test_the_gate_holds_the_cpu_and_load_rows_at_the_users_door() -> None:
    """The runtime gate's pattern picks UsersDoor's CPU ratios and its loads, not its wall-clock rows."""
    names = [f"bench_users.UsersDoor.{m}" for m in dir(bench_users.UsersDoor) if m.startswith("track_")]
    held = sorted(n.rsplit(".", 1)[1] for n in names if re.search(gate.RUNTIME_BENCHMARKS, n))
    assert held == [
        "track_callbacks_cpu_vs_pool",
        "track_load70_vs_floor",
        "track_load80_vs_floor",
        "track_map_builtin_cpu_vs_pool",
        "track_map_cpu_vs_pool",
        "track_submit_cpu_vs_pool",
    ]


def _script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchtools.users", *args]
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("args", "named"),
    [(["--rounds", "0"], "--rounds"), (["--systems", "sparrow,pooll"], "pooll"), (["--figures", "mapp"], "mapp")],
)
def test_bad_arguments_are_refused_naming_them(args: list[str], named: str) -> None:
    """A usage error (status 2) naming what is wrong, before any system starts."""
    run = _script(*args)
    assert run.returncode == 2 and named in run.stderr


def test_the_asv_rows_import_nothing_of_the_repository() -> None:
    """asv runs bench/ in a process without the repository's root on its path: bench_users.py imports only the
    standard library and reads the run's figures from its JSON."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(bench_users.__file__).read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= sys.stdlib_module_names | {"__future__"}, imported


@pytest.mark.slow
def test_the_asv_rows_read_a_run_with_the_scripts_own_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    """UsersDoor runs the script in a process of its own (its functions in `__main__`, pickled by value) on Sparrow
    and the pool, and every row gets a finite positive figure from that run."""
    monkeypatch.setattr(bench_users, "COMMAND", [*bench_users.COMMAND, *TINY])
    rows = bench_users.UsersDoor()
    figures = rows.setup_cache()
    assert "unavailable" not in figures, figures
    rows.setup(figures)
    for name in bench_users.ROWS:
        value = getattr(rows, f"track_{name}")(figures)
        assert math.isfinite(value) and value > 0, name
    del figures["dask"]  # a run without dask installed: its rows are n/a (NotImplementedError), not errors
    with pytest.raises(NotImplementedError, match="dask"):
        rows.track_dask_time_vs_pool(figures)


@pytest.mark.slow
def test_a_run_measures_every_figure_on_every_system() -> None:
    """Two rounds on Sparrow and the pool: each round has every figure (and the CPU of the throughputs) for both,
    the loads through the async Client too on Sparrow, and the functions were the script's own."""
    run = _script("--json", "--rounds", "2", "--systems", "sparrow,pool", *TINY, timeout=600)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["module"] == "__main__"
    throughputs = ("map", "map_builtin", "submit", "callbacks")
    expected = {*users.FIGURES, *(f"{f}_cpu" for f in throughputs)}
    for one_round in out["rounds"]:
        assert set(one_round["pool"]) == expected
        assert set(one_round["sparrow"]) == expected | {"load80_client", "load70_client"}
        assert all(value > 0 for figures in one_round.values() for value in figures.values())
