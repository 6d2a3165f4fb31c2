"""Policies compared on the same workload: the paper's order, cancellation, constraints,
priorities, fair sharing, and determinism by seed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, simulate

BASE = SimConfig(n_workers=500, slots=1, tasks_per_job=10, n_jobs=3000, load=0.8, seed=5)


def test_policies_order_as_in_the_paper_at_load_08() -> None:
    """random > per_task > batch > sparrow >= omniscient in mean response time."""
    mean = {p: simulate(replace(BASE, policy=p)).summary()["mean"] for p in PLACEMENT_POLICIES}
    assert mean["random"] > mean["per_task"] > mean["batch"] > mean["sparrow"] >= mean["omniscient"]


def test_every_policy_sees_the_same_jobs_for_a_seed() -> None:
    """Workload draws are independent of the policy (common random numbers)."""
    results = [simulate(replace(BASE, policy=p, n_jobs=300)) for p in PLACEMENT_POLICIES]
    for r in results[1:]:
        np.testing.assert_array_equal(r.job_arrival, results[0].job_arrival)
        np.testing.assert_array_equal(r.job_ideal, results[0].job_ideal)


def test_same_seed_same_result_other_seed_other_result() -> None:
    """A simulation is a function of its configuration, seed included."""
    config = replace(BASE, n_jobs=500, n_schedulers=3, queue_policy="fair", user_weights=(3.0, 1.0))
    a, b = simulate(config), simulate(config)
    for name in ("job_arrival", "job_response", "job_wait", "job_user", "task_wait"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.counters == b.counters
    c = simulate(replace(config, seed=6))
    assert not np.array_equal(a.job_response, c.job_response)


def test_cancellation_lowers_empty_get_task_answers() -> None:
    """Cancelling leftover reservations spares workers most of the empty get_task round trips."""
    on = simulate(replace(BASE, policy="sparrow", cancellation=True)).counters
    off = simulate(replace(BASE, policy="sparrow", cancellation=False)).counters
    assert on["cancelled"] > 0 and off["cancelled"] == 0
    assert on["get_task_empty"] < 0.5 * off["get_task_empty"]


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_job_constraint_to_one_worker_serialises_the_job(policy: str) -> None:
    """A job allowed on a single worker runs its tasks one after another there."""
    config = SimConfig(
        policy=policy,
        n_workers=100,
        tasks_per_job=4,
        n_jobs=50,
        load=1e-5,
        duration="constant",
        mean_duration=1.0,
        network_delay=0.0,
        constrained_jobs=1.0,
        constraint_workers=0.01,
    )
    np.testing.assert_allclose(simulate(config).job_response, 4.0)


@pytest.mark.parametrize("policy", ["per_task", "batch", "sparrow", "omniscient"])
def test_task_constraints_pin_tasks_to_their_candidates(policy: str) -> None:
    """Two tasks each pinned to one random worker of two share it half the time (response 2d)."""
    config = SimConfig(
        policy=policy,
        n_workers=2,
        tasks_per_job=2,
        n_jobs=2000,
        load=1e-5,
        duration="constant",
        mean_duration=1.0,
        network_delay=0.0,
        constrained_tasks=1.0,
        task_candidates=1,
    )
    response = simulate(config).job_response
    assert set(np.round(response, 9)) == {1.0, 2.0}
    assert np.mean(response == 2.0) == pytest.approx(0.5, abs=0.05)
    free = simulate(replace(config, constrained_tasks=0.0)).job_response
    np.testing.assert_allclose(free, 1.0)


@pytest.mark.parametrize("policy", ["random", "per_task", "batch", "sparrow"])
def test_strict_priority_serves_high_priority_jobs_faster(policy: str) -> None:
    """Half the jobs at priority 0 wait much less than the half at priority 1."""
    r = simulate(replace(BASE, policy=policy, load=0.9, queue_policy="priority", priority_shares=(0.5, 0.5)))
    first = len(r.job_response) // 10
    resp, prio = r.job_response[first:], r.job_priority[first:]
    assert resp[prio == 0].mean() < 0.9 * resp[prio == 1].mean()


def test_fair_sharing_favours_the_heavier_user_only_when_weighted() -> None:
    """Users 3:1 with equal demand: the weight-3 user waits less; with 1:1 they are even."""
    config = replace(BASE, policy="sparrow", load=0.9, queue_policy="fair", user_demands=(0.5, 0.5))
    r = simulate(replace(config, user_weights=(3.0, 1.0)))
    assert r.job_response[r.job_user == 0].mean() < 0.9 * r.job_response[r.job_user == 1].mean()
    even = simulate(replace(config, user_weights=(1.0, 1.0)))
    u0, u1 = (even.job_response[even.job_user == u].mean() for u in (0, 1))
    assert u0 == pytest.approx(u1, rel=0.1)


@pytest.mark.parametrize("duration", ["exponential", "constant", "bimodal", "per_job"])
def test_duration_distributions_keep_the_mean(duration: str) -> None:
    """Every duration kind keeps mean_duration, so the load means the same thing."""
    r = simulate(replace(BASE, policy="omniscient", duration=duration, n_jobs=2000, mean_duration=0.2))
    per_job_spread = r.job_ideal.std()
    assert r.summary(warmup=0.0)["mean_ideal"] > 0
    if duration == "constant":
        np.testing.assert_allclose(r.job_ideal, 0.2)
    else:
        assert per_job_spread > 0


def test_spreading_jobs_over_schedulers_changes_no_decision() -> None:
    """Schedulers share no state and a job's state is its own, so 1 or 7 schedulers give
    the same run (what the paper's design relies on to scale out)."""
    one = simulate(replace(BASE, policy="sparrow", n_jobs=500, n_schedulers=1))
    seven = simulate(replace(BASE, policy="sparrow", n_jobs=500, n_schedulers=7))
    np.testing.assert_array_equal(one.job_response, seven.job_response)
    assert one.counters == seven.counters


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_mixed_constrained_and_free_tasks_run_under_every_policy(policy: str) -> None:
    """Jobs where a fifth of the tasks are pinned to 3 candidates complete under every policy
    (random, per_task and omniscient once raised on them), each job no faster than its longest task."""
    config = replace(BASE, policy=policy, load=0.5, constrained_tasks=0.2, task_candidates=3)
    result = simulate(config)
    assert len(result.job_response) == config.n_jobs
    assert np.all(np.isfinite(result.job_response))
    assert np.all(result.job_response >= result.job_ideal - 1e-12)
