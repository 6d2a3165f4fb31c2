"""The simulator against queueing theory and the analytic anchors of docs/design.md."""

from __future__ import annotations

import pytest

from sparrow_core.sim import SimConfig, simulate
from sparrow_core.sim.analytic import mm1_response, no_queueing_batch, no_queueing_per_task


@pytest.mark.parametrize("load", [0.5, 0.7])
def test_random_on_one_slot_workers_is_mm1_per_task(load: float) -> None:
    """1-task jobs placed at random on 1-slot workers: mean response 1/(1-load) x mean duration."""
    config = SimConfig(
        policy="random",
        n_workers=100,
        slots=1,
        tasks_per_job=1,
        load=load,
        n_jobs=200_000,
        mean_duration=1.0,
        network_delay=0.0,
        seed=3,
    )
    mean = simulate(config).summary(warmup=0.1)["mean"]
    assert mean == pytest.approx(mm1_response(load, 1.0), rel=0.04)


def test_omniscient_at_moderate_load_barely_queues() -> None:
    """An ideal central scheduler on many workers at load 0.5 almost never makes a task wait."""
    summary = simulate(
        SimConfig(policy="omniscient", n_workers=2000, tasks_per_job=10, load=0.5, n_jobs=5000)
    ).summary()
    assert summary["no_queueing"] > 0.99
    assert summary["response_over_ideal"] < 1.01


@pytest.mark.parametrize(("policy", "formula"), [("per_task", no_queueing_per_task), ("batch", no_queueing_batch)])
@pytest.mark.parametrize("load", [0.3, 0.5, 0.7])
def test_fraction_of_jobs_without_queueing_matches_the_analytic_formula(policy: str, formula, load: float) -> None:  # type: ignore[no-untyped-def]
    """With many workers each one is busy about independently with probability = load.

    The run lasts 40 mean task durations and the first 30% of jobs are dropped: the cluster
    starts empty, and a shorter warm-up overstates the fraction noticeably."""
    config = SimConfig(
        policy=policy,
        n_workers=10_000,
        slots=1,
        tasks_per_job=10,
        probe_ratio=2.0,
        load=load,
        n_jobs=20_000,
        network_delay=0.0,
        seed=11,
    )
    measured = simulate(config).summary(warmup=0.3)["no_queueing"]
    assert measured == pytest.approx(formula(load, 2, 10), abs=0.03)
