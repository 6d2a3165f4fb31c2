"""A run's own steal attempts replayed by the model (steal_replay.py, steal.py): the node monitors' logs
are read as simulator workers in time order, moved onto the model's clock, handed to sparrow_steal, and the report
counts what was replayed beside the model drawing its victims."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sparrow_experiments.placement import RunPlacement
from sparrow_experiments.replay import Hops, ReplayJob, StealAttempt, model
from sparrow_experiments.steal import MODEL_SEEDS, StealRun, _model_steals, verdicts
from sparrow_experiments.steal_replay import on_model_clock, run_steals
from sparrow_experiments.steal_timing import StealTiming
from sparrow_experiments.submissions import ReplayedSubmissions

NODES = ["nm-0", "nm-1", "nm-2"]


def write_steal_log(folder: Path, node: str, address: str, attempts: list[tuple[float, list[str]]]) -> None:
    (folder / "steals").mkdir(exist_ok=True)
    lines = [{"node": node, "address": address}]
    lines += [{"at": at, "victims": victims, "chose": "", "took": 0} for at, victims in attempts]
    (folder / "steals" / f"{node}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_the_logs_become_attempts_of_workers_in_time_order(tmp_path: Path) -> None:
    """Steal addresses are named by the node monitor whose header gives them (node monitor i of the cluster is
    worker i); the attempts of all node monitors come back in time order; one that probed nobody is left out."""
    write_steal_log(tmp_path, "nm-2", "h:3", [(1.0, ["h:1"]), (3.0, ["h:1", "h:2"])])
    write_steal_log(tmp_path, "nm-0", "h:1", [(2.0, ["h:3", "h:2"]), (2.5, [])])
    write_steal_log(tmp_path, "nm-1", "h:2", [])
    assert run_steals(tmp_path, NODES) == [
        StealAttempt(1.0, 2, (0,)),
        StealAttempt(2.0, 0, (2, 1)),
        StealAttempt(3.0, 2, (0, 1)),
    ]
    assert run_steals(tmp_path / "none", NODES) == []  # no log: stealing was off


def test_a_log_of_another_cluster_is_an_error(tmp_path: Path) -> None:
    write_steal_log(tmp_path, "nm-0", "h:1", [(1.0, ["h:9"])])
    with pytest.raises(ValueError, match="'h:9', the steal address of no node monitor"):
        run_steals(tmp_path, NODES)
    write_steal_log(tmp_path, "nm-7", "h:7", [])
    with pytest.raises(ValueError, match="node monitor 'nm-7', not one of the cluster's"):
        run_steals(tmp_path, NODES)


def test_the_attempts_move_onto_the_model_s_clock() -> None:
    """With each job's submission replayed, a run's time t is the model's t - origin + submit_delay, and the model's
    thieves probe steal_wait after they become idle where the run's did `wake` after: 100.020 - 100 + 0.001 +
    (0.004 - 0.001). Without it, t less the first job's arrival, with the same lag."""
    attempts = [StealAttempt(100.020, 1, (0, 2))]
    placement = RunPlacement([], math.nan, 0, steals=attempts)
    hops = Hops(chain_gap=0.002, idle_start=0.006, result=0.001)  # submit: 0.006 - 3 x 0.001
    timing = StealTiming(attempts=1, wake=0.001, probe=0.003, take=0.001)
    submissions = ReplayedSubmissions([], np.zeros(0), 0, np.zeros(0), origin=100.0)
    (moved,) = _model_steals([], placement, submissions, hops, 0.004, timing)
    assert moved.at == pytest.approx(0.020 + 0.003 + 0.003) and moved.thief == 1 and moved.victims == (0, 2)
    records = [SimpleNamespace(arrived=99.5)]
    (plain,) = _model_steals(records, placement, None, hops, 0.004, timing)  # type: ignore[arg-type]
    assert plain.at == pytest.approx(0.520 + 0.003)
    assert _model_steals(records, None, None, hops, 0.004, timing) == []  # type: ignore[arg-type]
    assert on_model_clock(attempts, 100.0, 0.5)[0].at == pytest.approx(0.52)


def test_the_model_replays_the_attempts_it_is_given() -> None:
    """A long task on worker 1 with a short job queued behind it, and worker 0 idle after its own short task: the
    model's thief probes the logged victim (worker 1) at its attempt, in every seed, and steals the short job."""
    jobs = [
        ReplayJob(0.0, np.array([5.0]), probes=(1,)),
        ReplayJob(0.001, np.array([0.05]), probes=(1,)),
        ReplayJob(0.002, np.array([0.05]), probes=(0,)),
    ]
    hops = Hops(chain_gap=0.0, idle_start=0.0, result=0.0)
    steals = [StealAttempt(0.052, 0, (1,))]
    results = model(jobs, hops, node_monitors=3, slots=1, policy="sparrow_steal", seeds=4, steals=steals)
    assert all(r.counters["steal_replayed"] == 1 and r.counters["stolen"] == 1 for r in results)
    assert all(r.job_response[1] < 0.2 for r in results)


def run(steal: bool, short_ms: float, simulated_ms: float, **fields) -> StealRun:
    """A run of 3 short jobs and 1 long one whose short jobs all took `short_ms` (the model: `simulated_ms`)."""
    long = np.array([False, False, False, True])
    response = np.where(long, 2.0, short_ms / 1e3)
    simulated = np.tile(np.where(long, 2.0, simulated_ms / 1e3), MODEL_SEEDS)
    return StealRun(steal, 0, long, response, simulated, response / 2, 0, 5, placed=True, **fields)


def test_the_report_counts_the_replayed_attempts_and_sets_the_drawn_victims_beside() -> None:
    """An ON run whose model replayed 90 of its 100 attempts (120 logged), 5% off, beside the model drawing its
    victims, 20% off: both errors, agreements and seeds' shares are given, and the run without a replay (off) adds
    nothing."""
    drawn = np.tile(np.array([0.12, 0.12, 0.12, 2.0]), MODEL_SEEDS)
    on = run(True, 100, 105, logged_attempts=120, model_attempts=100.0, replayed_attempts=90.0, victims_drawn=drawn)
    off = run(False, 300, 300)
    lines = verdicts([off, on])
    replayed = next(x for x in lines if x.startswith("With stealing on, the model's thieves probed"))
    assert "seed 0 90 replayed and 10 drawn (120 logged)" in replayed
    beside = next(x for x in lines if x.startswith("The same model drawing its own steal victims"))
    assert "error at the short p50 +20% (replayed +5%)" in beside
    assert "same side job by job 100.0% (replayed 100.0%)" in beside
    assert "seeds within 10% of its pooled p50 100% (replayed 100%)" in beside
    assert "seeds' p10-p90 120.0-120.0 ms (replayed 105.0-105.0 ms)" in beside
    drawn_run = on.with_victims_drawn()
    assert drawn_run is not None and drawn_run.p(50, simulated=True) == pytest.approx(0.12)
    assert off.with_victims_drawn() is None
    assert not any(x.startswith("With stealing on, the model's") for x in verdicts([off]))
