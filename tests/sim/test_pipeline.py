"""Pipelined late binding (policies sparrow_pipelined and sparrow_steal_pipelined,
csrc/sparrow/sim/policy/pipeline.h): a busy slot asks for its next task ahead, which hides the
scheduler round trip; every task still runs once, and with no ask ahead the decisions are plain
Sparrow's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, simulate

SHORT = SimConfig(
    n_workers=300,
    tasks_per_job=10,
    n_jobs=2000,
    load=0.9,
    mean_duration=0.005,
    network_delay=0.00015,
    seed=5,
)
PIPELINED = ("sparrow_pipelined", "sparrow_steal_pipelined")
D = 0.01  # one-way delay of the exact scenarios


@pytest.fixture
def one_job_of_three(tmp_path: Path) -> Path:
    path = tmp_path / "three.txt"
    path.write_text("0 3 1.0\n")
    return path


def test_asking_ahead_at_once_hides_every_round_trip_but_the_first(one_job_of_three: Path) -> None:
    """One 1-slot worker, three 1 s tasks: plain late binding idles the slot one round trip (2d)
    before each task (response 3 + 7d); asking ahead as each task starts idles it only before the
    first (3 + 3d)."""
    config = SimConfig(n_workers=1, trace=one_job_of_three, network_delay=D)
    plain = simulate(replace(config, policy="sparrow"))
    ahead = simulate(replace(config, policy="sparrow_pipelined", pipeline_after=0.0))
    assert plain.job_response[0] == pytest.approx(3.0 + 7 * D, abs=1e-9)
    assert ahead.job_response[0] == pytest.approx(3.0 + 3 * D, abs=1e-9)
    assert ahead.counters["asked_ahead"] >= 2 and ahead.counters["bound_ahead"] == 2
    # the bound tasks waited for the slot: waits 0, then until each previous task ended
    assert sorted(ahead.task_wait.tolist()) == pytest.approx([0.0, 1.0 + 2 * D, 2.0 + 2 * D], abs=1e-9)


def test_a_timed_ask_waits_for_the_workers_median(one_job_of_three: Path) -> None:
    """pipeline_after = 0.5: the first task starts with no run time known, so the second is asked
    for only once the slot frees (2d idle); the second then asks at half the median (1 s) and the
    third starts at once: response 3 + 5d."""
    config = SimConfig(n_workers=1, trace=one_job_of_three, network_delay=D, policy="sparrow_pipelined")
    timed = simulate(replace(config, pipeline_after=0.5))
    assert timed.job_response[0] == pytest.approx(3.0 + 5 * D, abs=1e-9)
    assert timed.counters["bound_ahead"] == 1


def test_an_ask_ahead_answered_after_the_slot_freed_starts_at_once(tmp_path: Path) -> None:
    """Tasks shorter than the round trip (0.001 s, d = 0.01): each ask ahead is still in flight
    when the slot frees, so it takes the slot and its task starts on the answer (none waits bound):
    each of the last two tasks starts one task earlier than under plain late binding."""
    path = tmp_path / "short.txt"
    path.write_text("0 3 0.001\n")
    config = SimConfig(n_workers=1, trace=path, network_delay=D)
    plain = simulate(replace(config, policy="sparrow"))
    ahead = simulate(replace(config, policy="sparrow_pipelined"))
    assert ahead.counters["bound_ahead"] == 0 and ahead.counters["asked_ahead"] >= 2
    assert plain.job_response[0] == pytest.approx(7 * D + 0.003, abs=1e-9)
    assert ahead.job_response[0] == pytest.approx(7 * D + 0.001, abs=1e-9)


@pytest.mark.parametrize("policy", PIPELINED)
@pytest.mark.parametrize(
    ("queue_policy", "slots", "after"),
    [("fifo", 1, 0.0), ("fifo", 4, 0.5), ("priority", 2, 0.0), ("fair", 1, 1.0), ("fair", 3, 0.0)],
)
def test_every_task_runs_once_when_pipelined(policy: str, queue_policy: str, slots: int, after: float) -> None:
    """Multi-slot workers, every queue policy, two users 3:1 and two schedulers, with and without
    stealing: tasks were asked for ahead and bound, every job finishes (the run checks none is
    left) and the schedulers bound exactly one task per task."""
    config = replace(
        SHORT,
        policy=policy,
        pipeline_after=after,
        slots=slots,
        queue_policy=queue_policy,
        n_schedulers=2,
        user_weights=(3.0, 1.0),
        priority_shares=(0.5, 0.5),
        n_jobs=600,
    )
    result = simulate(config)
    c = result.counters
    assert c["bound_ahead"] > 0 and c["bound_ahead"] <= c["asked_ahead"]
    assert c["get_task"] - c["get_task_empty"] == result.n_tasks
    assert np.all(result.job_response >= result.job_ideal)
    assert np.all(result.task_wait >= 0)


def test_constrained_jobs_are_pipelined_too() -> None:
    """Per-task and job constraints: asks ahead go to the schedulers like any GetTask, and every
    task still runs once."""
    result = simulate(
        replace(SHORT, policy="sparrow_pipelined", n_jobs=600, constrained_tasks=0.5, constrained_jobs=0.2)
    )
    assert result.counters["bound_ahead"] > 0
    assert result.counters["get_task"] - result.counters["get_task_empty"] == result.n_tasks


@pytest.mark.parametrize(
    ("pipelined", "plain"), [("sparrow_pipelined", "sparrow"), ("sparrow_steal_pipelined", "sparrow_steal")]
)
def test_without_an_ask_ahead_the_pipelined_policy_decides_as_its_plain_one(pipelined: str, plain: str) -> None:
    """A pipeline_after no task reaches: nothing is asked ahead, and every response and wait equals
    the plain policy's (pipelining draws no random numbers)."""
    config = replace(SHORT, n_jobs=800)
    base = simulate(replace(config, policy=plain))
    never = simulate(replace(config, policy=pipelined, pipeline_after=1e9))
    assert never.counters["asked_ahead"] == 0
    np.testing.assert_array_equal(never.job_response, base.job_response)
    np.testing.assert_array_equal(never.task_wait, base.task_wait)


def test_pipelining_raises_the_throughput_late_binding_loses_to_round_trips() -> None:
    """Round trips of 1.2x the mean task (0.005 s tasks, d = 0.003) at load 0.5: plain late binding
    holds each slot 2.2 task times per task, so it falls behind; asked ahead, the round trips overlap
    running tasks and jobs keep up (a lower p50 than plain Sparrow's by far)."""
    config = replace(SHORT, load=0.5, network_delay=0.003, n_jobs=1500)
    plain = simulate(replace(config, policy="sparrow")).summary()
    ahead = simulate(replace(config, policy="sparrow_pipelined")).summary()
    assert ahead["p50"] < 0.5 * plain["p50"]


@pytest.mark.parametrize(
    ("value", "error"), [(-1.0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), ("1", TypeError)]
)
def test_a_bad_pipeline_after_is_rejected_by_name(value: object, error: type) -> None:
    """A bad pipeline_after is refused before the simulation starts, naming the field."""
    with pytest.raises(error, match="pipeline_after"):
        simulate(replace(SHORT, policy="sparrow_pipelined", pipeline_after=value))  # type: ignore[arg-type]
