"""The resource simulator (csrc/sparrow/sim/resource/): Sparrow with the fit launcher against the
omniscient packer on the same arrivals; every task runs where it fits, every job ends, the same
seed gives the same run, and the launch rule's aging is what keeps a large request from starving."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sparrow_core.sim import RESOURCE_PLACEMENTS, ResourceSimConfig, simulate_resources

BASE = ResourceSimConfig.of("mixed", n_workers=200, n_jobs=2000, load=0.7, seed=3)


@pytest.mark.parametrize("workload", ["gpu", "mixed"])
def test_both_placements_see_the_same_hosts_and_jobs_and_finish_every_job(workload):
    """Common random numbers: hosts, arrivals and classes do not depend on the placement; every job
    ends after its last task started; the packer holds nothing but running tasks."""
    config = ResourceSimConfig.of(workload, n_workers=200, n_jobs=1500, load=0.7, seed=1)
    runs = {p: simulate_resources(replace(config, policy=p)) for p in RESOURCE_PLACEMENTS}
    sparrow, packer = runs["sparrow"], runs["packer"]
    for name in ("job_arrival", "job_class", "host_class"):
        np.testing.assert_array_equal(getattr(sparrow, name), getattr(packer, name))
    np.testing.assert_allclose(sparrow.work, packer.work)  # the same tasks ran
    for run in runs.values():
        assert np.all(run.job_response > 0) and np.all(run.job_response >= run.job_wait)
    np.testing.assert_allclose(packer.held, packer.work, rtol=1e-9)
    assert np.all(sparrow.held >= sparrow.work)  # and the get_task round trips


def test_sparrow_pays_three_message_hops_before_a_task_starts():
    """Reservation, get_task, task: no task of Sparrow's starts before 3 network delays."""
    run = simulate_resources(replace(BASE, network_delay=0.01, load=0.2))
    assert run.job_wait.min() >= 0.03 - 1e-12


def test_the_packer_at_low_load_places_at_once():
    """Omniscient and with room everywhere, the packer starts nearly every job's tasks on arrival."""
    run = simulate_resources(replace(BASE, policy="packer", load=0.1))
    assert np.mean(run.job_wait == 0.0) > 0.95


def test_the_same_seed_gives_the_same_run():
    a, b = simulate_resources(BASE), simulate_resources(BASE)
    np.testing.assert_array_equal(a.job_response, b.job_response)
    assert a.counters == b.counters
    assert not np.array_equal(a.job_response, simulate_resources(replace(BASE, seed=4)).job_response)


def test_gpu_tasks_run_only_on_gpu_hosts_and_probes_go_only_there():
    """A request that only GPU hosts hold has its probes among them: with half the hosts GPU-less
    and every task asking for a GPU, no reservation is wasted on a host without one (every probe
    is answered, a task or nothing left, on a GPU host)."""
    config = ResourceSimConfig(
        kinds=("slots", "gpu"),
        hosts=((0.5, (4, 0)), (0.5, (4, 2))),
        requests=((1.0, (1, 1)),),
        n_workers=100,
        n_jobs=500,
        load=0.6,
        seed=2,
    )
    run = simulate_resources(config)
    assert run.counters["probes"] == run.counters["get_task"] + run.counters["cancelled"]
    assert run.summary()["util_gpu"] > 0.3


def test_aging_keeps_a_large_request_from_starving():
    """Hosts of 4 CPUs, 1-CPU tasks and a few 4-CPU ones at high load: with skip-ahead unbounded the
    4-CPU jobs wait far longer than with the default bound of 8 skips."""
    config = ResourceSimConfig(
        kinds=("slots", "cpus"),
        hosts=((1.0, (4, 4000)),),
        requests=((0.95, (1, 1000)), (0.05, (1, 4000))),
        n_workers=100,
        n_jobs=4000,
        load=0.9,
        seed=7,
    )
    bounded = simulate_resources(config).summary()
    greedy = simulate_resources(replace(config, fit_max_skips=10**9)).summary()
    assert greedy["owed"] == 0 and bounded["owed"] > 0
    assert greedy["largest_wait_p99"] > 2 * bounded["largest_wait_p99"]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (dict(requests=((1.0, (1, 64_000, 0, 0)),)), ValueError, "request class 0 fits no host"),
        (dict(requests=((0.5, (1, 1000, 0, 0)),)), ValueError, "shares must sum to 1"),
        (dict(requests=((1.0, (2, 1000, 0, 0)),)), ValueError, "takes one slot"),
        (dict(requests=((1.0, (1, 1000)),)), ValueError, "one amount per kind"),
        (dict(requests=((1.0, (1, -1, 0, 0)),)), ValueError, "amount must be"),
        (dict(kinds=("cpus", "slots", "memory", "gpu")), ValueError, "the first 'slots'"),
        (dict(policy="best"), ValueError, "unknown policy 'best'"),
        (dict(fit_window=0), ValueError, "fit_window must be"),
        (dict(load=1.5), ValueError, "load must be"),
        (dict(n_workers=2.5), TypeError, "n_workers must be an int"),
    ],
)
def test_a_bad_configuration_is_a_clear_error(fields, error, message):
    with pytest.raises(error, match=message):
        simulate_resources(replace(ResourceSimConfig(n_workers=50, n_jobs=10), **fields))


def test_an_unknown_workload_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown workload 'tpu'"):
        ResourceSimConfig.of("tpu")
