"""The sparrow_steal policy (sparrow + work stealing, csrc/sparrow/sim/policy/steal.h): it
finishes every job, helps where Sparrow is weak (short jobs behind long tasks at high load),
never moves a constrained job's reservation, and leaves Sparrow's own decisions untouched."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, simulate

BIMODAL = SimConfig(
    n_workers=300,
    tasks_per_job=10,
    n_jobs=3000,
    load=0.9,
    duration="bimodal",
    bimodal_long_fraction=0.05,
    bimodal_ratio=20.0,
    seed=3,
)


def test_stealing_cuts_the_median_of_short_jobs_behind_long_tasks() -> None:
    """Bimodal durations at load 0.9: stealing at least halves Sparrow's distance to omniscient at p50."""
    p50 = {p: simulate(replace(BIMODAL, policy=p)).summary()["p50"] for p in ("sparrow", "sparrow_steal", "omniscient")}
    assert p50["sparrow_steal"] - p50["omniscient"] < 0.5 * (p50["sparrow"] - p50["omniscient"])


def test_every_task_runs_once_with_stealing() -> None:
    """Every job finishes with all its tasks (the run checks no job is left), reservations did
    move, and the scheduler bound exactly one task per task: get_task answers with a task equal
    the number of tasks."""
    result = simulate(replace(BIMODAL, policy="sparrow_steal", n_jobs=1000))
    c = result.counters
    assert c["stolen"] > 0 and c["steals"] <= c["steal_attempts"]
    assert c["get_task"] - c["get_task_empty"] == result.n_tasks
    assert np.all(result.job_response >= result.job_ideal)
    assert np.all(result.task_wait >= 0)


@pytest.mark.parametrize(("queue_policy", "slots"), [("fifo", 4), ("priority", 1), ("fair", 1), ("fair", 3)])
def test_every_task_runs_once_with_stealing_under_every_queue_policy(queue_policy: str, slots: int) -> None:
    """Multi-slot workers, priority and fair queues (two users 3:1, two schedulers): stealing moves
    reservations, every job finishes and each task is bound exactly once."""
    config = replace(
        BIMODAL,
        policy="sparrow_steal",
        n_jobs=600,
        slots=slots,
        queue_policy=queue_policy,
        n_schedulers=2,
        user_weights=(3.0, 1.0),
        priority_shares=(0.5, 0.5),
    )
    result = simulate(config)
    c = result.counters
    assert c["stolen"] > 0
    assert c["get_task"] - c["get_task_empty"] == result.n_tasks
    assert np.all(result.job_response >= result.job_ideal)


def test_constrained_reservations_are_never_stolen() -> None:
    """With every task constrained to 3 workers, idle workers try to steal but move nothing."""
    result = simulate(replace(BIMODAL, policy="sparrow_steal", n_jobs=500, constrained_tasks=1.0)).counters
    assert result["steal_attempts"] > 0
    assert result["stolen"] == 0


def test_without_a_steal_sparrow_steal_decides_as_sparrow() -> None:
    """A min_blocked no task reaches: no steal happens, and every response equals Sparrow's
    (stealing draws from its own generator)."""
    config = replace(BIMODAL, n_jobs=800)
    plain = simulate(replace(config, policy="sparrow"))
    never = simulate(replace(config, policy="sparrow_steal", steal_min_blocked=1e9))
    assert never.counters["steal_attempts"] > 0 and never.counters["stolen"] == 0
    np.testing.assert_array_equal(never.job_response, plain.job_response)


def test_more_victims_find_more_to_steal() -> None:
    """Asking 8 peers instead of 1 moves more reservations."""
    one = simulate(replace(BIMODAL, policy="sparrow_steal", n_jobs=800, steal_victims=1)).counters["stolen"]
    eight = simulate(replace(BIMODAL, policy="sparrow_steal", n_jobs=800, steal_victims=8)).counters["stolen"]
    assert eight > one


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("steal_victims", 0, ValueError),
        ("steal_max_take", 0, ValueError),
        ("steal_min_blocked", -1.0, ValueError),
        ("steal_min_blocked", float("nan"), ValueError),
        ("steal_victims", 2.5, TypeError),
        ("steal_wait", -0.1, ValueError),
        ("steal_wait", float("inf"), ValueError),
    ],
)
def test_bad_steal_settings_are_rejected_by_name(field: str, value: object, error: type) -> None:
    """A bad steal setting is refused before the simulation starts, naming the field."""
    with pytest.raises(error, match=field):
        simulate(replace(BIMODAL, policy="sparrow_steal", **{field: value}))


def test_a_thief_that_waits_before_probing_steals_less_and_later() -> None:
    """steal_wait (a runtime's reaction time, sparrow_experiments/steal_timing.py): waiting 50 ms before each attempt
    steals fewer reservations and leaves short jobs a higher p50 than not waiting; waiting past the run's end
    steals nothing and decides as plain sparrow."""
    runs = {w: simulate(replace(BIMODAL, policy="sparrow_steal", steal_wait=w)) for w in (0.0, 0.05, 1e6)}
    assert runs[0.05].counters["stolen"] < runs[0.0].counters["stolen"]
    assert runs[0.05].summary()["p50"] > runs[0.0].summary()["p50"]
    assert runs[1e6].counters["stolen"] == 0
    np.testing.assert_array_equal(runs[1e6].job_response, simulate(replace(BIMODAL, policy="sparrow")).job_response)
