"""Just-in-time pipelining in the simulator (`pipeline_jit` with `pipeline_gate`, policy/pipeline.h over the
kernel's rule, sparrow/pipeline.h): while a worker's last 8 run times are steady, a busy slot asks for its next
task shortly before the running task's predicted end, so a bound task waits a margin, not a whole task; varied
run times ask nothing ahead."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, simulate

from .one_worker import D, assert_asks_nothing_and_decides_as_plain, one_worker, trace


def test_steady_tasks_ask_just_before_the_predicted_end_and_save_a_round_trip_each(tmp_path: Path) -> None:
    """One 1-slot worker, one job of 20 tasks of 1 s: the gate alone (1 s tasks are long) asks nothing ahead and
    decides as plain late binding; just in time, once 8 tasks ran (steady), each later task but the job's last few
    (the half rule) is asked a round trip and the margin before the running one ends: each bound task saves exactly
    one round trip (2d), and waited for its slot only the margin."""
    config = SimConfig(
        policy="sparrow_pipelined", n_workers=1, network_delay=D, trace=trace(tmp_path / "t.txt", [1.0] * 20)
    )
    plain = simulate(replace(config, policy="sparrow"))
    gated = simulate(replace(config, pipeline_gate=True, pipeline_depth=16))
    jit = simulate(replace(config, pipeline_gate=True, pipeline_depth=16, pipeline_jit=True))
    assert gated.counters["asked_ahead"] == 0
    np.testing.assert_array_equal(gated.job_response, plain.job_response)
    bound = jit.counters["bound_ahead"]
    assert bound >= 8
    assert plain.job_response[0] - jit.job_response[0] == pytest.approx(bound * 2 * D, abs=1e-9)
    waits = np.sort(jit.task_wait)[-bound:]  # the bound tasks waited from their answer to the slot's end, at most
    assert waits.max() > 1.0  # (each task's wait counts from the job's arrival: the slot's queue before it)
    assert jit.counters["asked_ahead"] == bound


@pytest.mark.parametrize(
    "durations",
    [
        [1.0, 1.0, 1.0, 1.6] * 5,  # any 8 in a row: the longest over 1.5x the shortest
        list(np.random.default_rng(3).exponential(1.0, 20)),
    ],
)
def test_varied_run_times_ask_nothing_ahead(tmp_path: Path, durations: list[float]) -> None:
    assert_asks_nothing_and_decides_as_plain(one_worker(tmp_path, durations, pipeline_jit=True))


def test_jit_without_the_gate_is_the_ungated_rule(tmp_path: Path) -> None:
    """pipeline_jit applies only with the gate: ungated, the worker asks ahead at once as before."""
    config = SimConfig(
        policy="sparrow_pipelined", n_workers=1, network_delay=D, trace=trace(tmp_path / "t.txt", [1.0] * 20)
    )
    np.testing.assert_array_equal(
        simulate(replace(config, pipeline_jit=True)).job_response, simulate(config).job_response
    )


def test_a_jit_that_is_not_a_bool_is_rejected_by_name() -> None:
    with pytest.raises(TypeError, match="pipeline_jit"):
        simulate(SimConfig(policy="sparrow_pipelined", n_jobs=10, pipeline_jit=1))  # type: ignore[arg-type]
