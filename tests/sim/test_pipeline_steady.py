"""Steady pipelining in the simulator (`pipeline_steady` with `pipeline_gate`, policy/pipeline.h, the runtime's
--pipeline-steady): while a worker's last 8 run times are steady, a busy slot asks for its next task at the running
task's start (just in time's opening of the gate, asked at once); varied run times ask nothing ahead, and a worker
holding one reservation of a job asks none of it ahead (the half rule), so a large cluster decides as plain late
binding."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, simulate

from .one_worker import D, assert_asks_nothing_and_decides_as_plain, one_worker


def test_steady_tasks_ask_at_the_start_and_save_a_round_trip_each(tmp_path: Path) -> None:
    """One 1-slot worker, one job of 20 tasks of 1 s: once 8 tasks ran (steady), each later task but the job's last
    few (the half rule) is asked ahead as the running one starts: each bound task saves exactly one round trip (2d)
    against plain late binding, and the gate alone asks nothing."""
    config = one_worker(tmp_path, [1.0] * 20, pipeline_steady=True)
    plain = simulate(replace(config, policy="sparrow"))
    gated = simulate(replace(config, pipeline_steady=False))
    steady = simulate(config)
    assert gated.counters["asked_ahead"] == 0
    bound = steady.counters["bound_ahead"]
    assert bound >= 8 and steady.counters["asked_ahead"] == bound
    assert plain.job_response[0] - steady.job_response[0] == pytest.approx(bound * 2 * D, abs=1e-9)


@pytest.mark.parametrize(
    "durations",
    [
        [1.0, 1.0, 1.0, 3.2] * 5,  # any 8 in a row: the longest over 3x (kSteadySpread) the shortest
        list(np.random.default_rng(3).exponential(1.0, 20)),
    ],
)
def test_varied_run_times_ask_nothing_ahead(tmp_path: Path, durations: list[float]) -> None:
    assert_asks_nothing_and_decides_as_plain(one_worker(tmp_path, durations, pipeline_steady=True))


def test_a_spread_within_3x_is_steady_where_just_in_time_is_not(tmp_path: Path) -> None:
    """Run times 1 and 2 s alternating (a loaded host's stretch): steady asks ahead (PIPELINE_STEADY_SPREAD 3), just in
    time (PIPELINE_JIT_SPREAD 1.5) asks nothing and decides as plain late binding."""
    config = one_worker(tmp_path, [1.0, 2.0] * 10)
    assert simulate(replace(config, pipeline_steady=True)).counters["asked_ahead"] > 0
    assert simulate(replace(config, pipeline_jit=True)).counters["asked_ahead"] == 0


def test_with_just_in_time_too_its_timing_wins(tmp_path: Path) -> None:
    config = one_worker(tmp_path, [1.0] * 20, pipeline_jit=True)
    np.testing.assert_array_equal(
        simulate(replace(config, pipeline_steady=True)).job_response, simulate(config).job_response
    )


def test_a_large_cluster_of_steady_workers_decides_as_plain_late_binding() -> None:
    """1,000 workers, 100-task jobs of constant 10 ms (every worker steady): each worker holds about one reservation
    of a job, so the half rule asks none ahead and every response equals plain Sparrow's."""
    config = SimConfig(
        policy="sparrow_pipelined",
        n_workers=1000,
        tasks_per_job=100,
        n_jobs=300,
        duration="constant",
        mean_duration=0.01,
        load=0.8,
        network_delay=0.00015,
        pipeline_gate=True,
        pipeline_depth=16,
        pipeline_steady=True,
    )
    assert_asks_nothing_and_decides_as_plain(config)


def test_a_steady_setting_that_is_not_a_bool_is_rejected_by_name() -> None:
    with pytest.raises(TypeError, match="pipeline_steady"):
        simulate(SimConfig(policy="sparrow_pipelined", n_jobs=10, pipeline_steady=1))  # type: ignore[arg-type]
