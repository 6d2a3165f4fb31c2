"""The node monitor's pipelining policies (services/pipeline/): one per mode behind one interface, the services' one
set of defaults, and each mode's limit of requests asked ahead on the same node state."""

from __future__ import annotations

import pytest

import sparrow_core
from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.pipeline import (
    DEFAULT_PIPELINE_DEPTH,
    DEFAULT_PIPELINE_MODE,
    MAX_PIPELINE_DEPTH,
    PIPELINE_MODES,
    make_pipeline,
)

SHORT = sparrow_core.PIPELINE_SHORT_TASK


def clock_at(now: float):
    return lambda: now


def test_every_mode_has_its_policy_and_the_defaults_are_the_services():
    """make_pipeline gives each mode's policy; the defaults (steady, 16 deep) are the logic's too."""
    assert PIPELINE_MODES == sparrow_core.PIPELINE_MODES and MAX_PIPELINE_DEPTH == sparrow_core.PIPELINE_MAX_DEPTH
    assert [make_pipeline(mode, 2).mode for mode in PIPELINE_MODES] == list(PIPELINE_MODES)
    assert (DEFAULT_PIPELINE_MODE, DEFAULT_PIPELINE_DEPTH) == ("steady", 16)
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1))
    assert (logic.pipeline.mode, logic.pipeline.depth) == (DEFAULT_PIPELINE_MODE, DEFAULT_PIPELINE_DEPTH)
    assert [make_pipeline(mode).asks_ahead for mode in PIPELINE_MODES] == [False, True, True, True, True]
    assert [make_pipeline(mode).times_requests for mode in PIPELINE_MODES] == [False, False, False, True, False]


@pytest.mark.parametrize("mode", ["fast", True, "", "Gated "])
def test_a_mode_it_does_not_know_is_refused_naming_the_modes(mode):
    with pytest.raises(ValueError, match="pipeline must be one of off, gated, steady, jit, always"):
        make_pipeline(mode)
    with pytest.raises(ValueError, match="pipeline must be one of off, gated, steady, jit, always"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline=mode))


@pytest.mark.parametrize("depth", [0, MAX_PIPELINE_DEPTH + 1, True, 2.0])
def test_a_depth_out_of_range_is_refused_naming_it(depth):
    with pytest.raises(ValueError, match="pipeline_depth must be an int in"):
        make_pipeline("gated", depth)


def limits(run_times: list[float], started: list[float], now: float, *, held: int = 2, depth: int = 4) -> dict:
    """Each mode's limit after `run_times`, with 2 slots held and running tasks started at `started`."""
    out = {}
    for mode in PIPELINE_MODES:
        policy = make_pipeline(mode, depth)
        for run_time in run_times:
            policy.ran(run_time)
        out[mode] = policy.limit(held, len(started), started, clock_at(now))
    return out


def test_before_any_task_ended_only_always_asks_ahead():
    """Nothing known: the gated modes wait for a short (or steady) history; always asks one per running task."""
    assert limits([], [0.0, 0.0], 0.0) == {"off": 0, "gated": 0, "steady": 0, "jit": 0, "always": 2}


def test_short_tasks_open_every_gate_deep():
    """Short run times: every mode but off asks `depth` per slot held."""
    assert limits([SHORT / 4] * 8, [1.0, 1.0], 1.0) == {"off": 0, "gated": 8, "steady": 8, "jit": 8, "always": 8}


def test_a_task_running_past_the_short_bound_shuts_the_short_gate():
    """Short history, but a running task has already run PIPELINE_SHORT_TASK: the gated modes hold back."""
    assert limits([SHORT / 4] * 8, [1.0, 1.0], 1.0 + 1.5 * SHORT) == {
        "off": 0,
        "gated": 0,
        "steady": 0,
        "jit": 0,
        "always": 8,
    }


def test_steady_10_ms_tasks_ask_one_per_due_task_in_steady_and_jit_only():
    """Eight 10 ms run times: gated stays shut; steady lets each running task ask from its start; jit only once it
    has run the shortest less the round trip and the margin, and none past the longest."""
    run = 0.010
    at_start = limits([run] * 8, [1.0, 1.0], 1.0)
    assert at_start == {"off": 0, "gated": 0, "steady": 2, "jit": 0, "always": 2}
    due = 1.0 + run - 0.001  # past jit's ask time (round trip 1 ms until measured, then the margin)
    assert limits([run] * 8, [1.0, 1.0], due)["jit"] == 2
    overran = 1.0 + run * 1.01
    assert limits([run] * 8, [1.0, 1.0], overran) == {"off": 0, "gated": 0, "steady": 0, "jit": 0, "always": 2}


def test_jit_wakes_the_shell_when_a_running_task_becomes_due():
    """ask_ahead_at: jit's next due time; steady asks at a task's start, so it has none to wait for."""
    jit, steady = make_pipeline("jit", 1), make_pipeline("steady", 1)
    for policy in (jit, steady):
        for _ in range(8):
            policy.ran(0.010)
    assert jit.ask_ahead_at([1.0], 1.0) == pytest.approx(1.0 + 0.010 - 0.001 - sparrow_core.PIPELINE_JIT_MARGIN)
    assert steady.ask_ahead_at([1.0], 1.0) is None
    assert make_pipeline("gated", 1).ask_ahead_at([1.0], 1.0) is None


def test_jit_measures_the_round_trip_of_its_requests_asked_ahead():
    """A request asked ahead at t and answered at t + 3 ms: jit's next ask time allows 3 ms, not the 1 ms default."""
    jit = make_pipeline("jit", 1)
    for _ in range(8):
        jit.ran(0.010)
    jit.asked_ahead(clock_at(5.0))
    jit.answered_ahead(clock_at(5.003), 0)
    jit.ran(0.010)
    assert jit.ask_ahead_at([6.0], 6.0) == pytest.approx(6.0 + 0.010 - 0.003 - sparrow_core.PIPELINE_JIT_MARGIN)
