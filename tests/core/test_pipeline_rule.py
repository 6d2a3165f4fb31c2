"""Pipelined late binding's rule (csrc/sparrow/pipeline.h, sparrow_core.PipelineRule): what a node's recent
run times say and the decisions made from them, as scenarios on the binding and the reference model; then
the binding against the reference on random run times, decision for decision."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparrow_core

from . import reference

SHORT = sparrow_core.PIPELINE_SHORT_TASK
RECENT = sparrow_core.PIPELINE_RECENT


def test_modes_are_the_five_in_order():
    """The modes a node monitor's --pipeline names, off first."""
    assert sparrow_core.PIPELINE_MODES == ("off", "gated", "steady", "jit", "always")


def test_off_never_asks_ahead(impl):
    """Off is plain late binding: the gate stays shut whatever the tasks did."""
    rule = impl.PipelineRule("off", 1)
    rule.record(SHORT / 10)
    assert not rule.gate_open(False)


def test_gated_opens_only_once_each_recent_task_ran_short(impl):
    """Gated: shut with no run time known; open (and deep) after a short one; shut again once any of the last
    PIPELINE_RECENT ran long, until that one falls out of the window."""
    rule = impl.PipelineRule("gated", 4)
    assert not rule.gate_open(False)
    rule.record(SHORT / 2)
    assert rule.gate_open(False) and rule.deep and rule.short_recent
    rule.record(SHORT * 2)
    assert not rule.gate_open(False) and not rule.deep
    for _ in range(RECENT - 1):
        rule.record(SHORT / 2)
    assert not rule.gate_open(False)
    rule.record(SHORT / 2)
    assert rule.gate_open(False)


def test_a_task_running_long_shuts_a_short_nodes_gate(impl):
    """A running task past PIPELINE_SHORT_TASK (overrunning) holds no request behind it on a short node."""
    rule = impl.PipelineRule("gated", 1)
    rule.record(SHORT / 2)
    assert rule.gate_open(False) and not rule.gate_open(True)


def test_always_asks_ahead_whatever_the_tasks_and_goes_deep_on_a_short_median(impl):
    """Always: open with no run time known; deep while the median is short even if one ran long."""
    rule = impl.PipelineRule("always", 3)
    assert rule.gate_open(False) and rule.gate_open(True)
    rule.record(SHORT / 2)
    rule.record(SHORT * 10)
    rule.record(SHORT / 2)
    assert rule.deep
    assert rule.ahead_limit(2, 1) == 6  # depth per slot held
    rule.record(SHORT * 10)
    rule.record(SHORT * 10)
    assert not rule.deep and rule.ahead_limit(2, 1) == 1  # one per running task that may ask


def test_steady_opens_for_run_times_within_3x_and_asks_at_the_start(impl):
    """Steady: eight 10-ms-class run times within PIPELINE_STEADY_SPREAD open the gate one deep, asking at a
    task's start and not behind one past the longest; a spread past it does not."""
    rule = impl.PipelineRule("steady", 16)
    for i in range(RECENT - 1):
        rule.record(0.010 + 0.010 * (i % 2))
        assert not rule.gate_open(False)  # fewer than PIPELINE_RECENT known
    rule.record(0.010)
    assert rule.steady and rule.gate_open(True) and not rule.deep
    assert rule.ask_after == 0.0 and rule.ask_until == pytest.approx(0.020)
    rule.record(0.010 * sparrow_core.PIPELINE_STEADY_SPREAD * 1.01)
    assert not rule.steady and not rule.gate_open(False)


def test_jit_asks_a_round_trip_and_the_margin_before_the_shortest_run_time(impl):
    """Jit: steady within PIPELINE_JIT_SPREAD; a running task may ask after the shortest recent run time less
    the round trip and PIPELINE_JIT_MARGIN; 1-and-2 alternating is steady only for the steady mode."""
    rule = impl.PipelineRule("jit", 1)
    for _ in range(RECENT):
        rule.record(0.010, round_trip=0.002)
    assert rule.steady
    assert rule.ask_after == pytest.approx(0.010 - 0.002 - sparrow_core.PIPELINE_JIT_MARGIN)
    wide = [impl.PipelineRule(mode, 1) for mode in ("jit", "steady")]
    for rule in wide:
        for i in range(RECENT):
            rule.record(1.0 + i % 2)
    assert [rule.steady for rule in wide] == [False, True]


def test_the_half_rule_asks_ahead_for_half_of_a_job_at_most(impl):
    """A node holding one reservation of a job asks none of it ahead; of 4, two."""
    allows = impl.PipelineRule.half_allows
    assert not allows(0, 1)
    assert allows(0, 2) and not allows(1, 1)
    assert allows(1, 3) and not allows(2, 2)
    assert impl.PipelineRule("gated", 1).half_rule_applies()
    assert not impl.PipelineRule("always", 1).half_rule_applies()


def test_which_modes_keep_run_times(impl):
    """Always one deep needs none; deeper, or any gated mode, does."""
    keeps = {
        (mode, depth): impl.PipelineRule(mode, depth).keeps_recent
        for mode in ("off", "always", "gated")
        for depth in (1, 2)
    }
    assert keeps == {
        ("off", 1): False,
        ("off", 2): False,
        ("always", 1): False,
        ("always", 2): True,
        ("gated", 1): True,
        ("gated", 2): True,
    }


@pytest.mark.parametrize(
    ("mode", "depth"), [("fast", 1), ("gated", 0), ("gated", sparrow_core.PIPELINE_MAX_DEPTH + 1), ("gated", True)]
)
def test_bad_modes_and_depths_are_refused(impl, mode, depth):
    with pytest.raises(ValueError, match="pipeline"):
        impl.PipelineRule(mode, depth)


@pytest.mark.parametrize(("run_time", "round_trip"), [(-1.0, 0.0), (math.nan, 0.0), (math.inf, 0.0), (0.1, math.nan)])
def test_bad_run_times_are_refused_and_change_nothing(impl, run_time, round_trip):
    rule = impl.PipelineRule("gated", 1)
    rule.record(SHORT / 2)
    with pytest.raises(ValueError, match="run_time"):
        rule.record(run_time, round_trip)
    assert rule.recent == [SHORT / 2] and rule.gate_open(False)


run_times = st.one_of(
    st.floats(0.0, 2 * SHORT, allow_nan=False),
    st.floats(0.0, 0.05, allow_nan=False),
    st.sampled_from([0.0, SHORT, 0.010, 0.030]),
)


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(sparrow_core.PIPELINE_MODES),
    depth=st.integers(1, sparrow_core.PIPELINE_MAX_DEPTH),
    steps=st.lists(
        st.tuples(run_times, st.floats(0.0, 0.005), st.integers(0, 16), st.integers(0, 16), st.booleans()),
        max_size=30,
    ),
)
def test_binding_decides_as_the_reference(mode, depth, steps):
    """After every run time, the view and every decision of the kernel equal the reference model's."""
    kernel, model = sparrow_core.PipelineRule(mode, depth), reference.PipelineRule(mode, depth)
    assert kernel.keeps_recent == model.keeps_recent
    for run_time, round_trip, held, may_ask, overrunning in steps:
        kernel.record(run_time, round_trip)
        model.record(run_time, round_trip)
        assert kernel.recent == model.recent
        assert kernel.longest == model.longest
        assert (kernel.short_recent, kernel.deep, kernel.steady) == (model.short_recent, model.deep, model.steady)
        assert (kernel.ask_after, kernel.ask_until) == (model.ask_after, model.ask_until)
        assert kernel.gate_open(overrunning) == model.gate_open(overrunning)
        assert kernel.ahead_limit(held, may_ask) == model.ahead_limit(held, may_ask)
        assert kernel.half_rule_applies() == model.half_rule_applies()
        assert kernel.half_allows(may_ask, held) == model.half_allows(may_ask, held)
