"""The message model, checked exactly on sparse traces: hops per policy, ideal, waits, counters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, simulate

DELAY = 0.001
# One-way hops between a job's arrival and its tasks' start on an idle cluster.
HOPS = {
    "random": 1,
    "per_task": 3,
    "batch": 3,
    "sparrow": 3,
    "sparrow_steal": 3,
    "sparrow_pipelined": 3,
    "sparrow_steal_pipelined": 3,
    "omniscient": 0,
}


@pytest.fixture
def sparse_trace(tmp_path: Path) -> Path:
    """Three jobs far apart, so none ever waits: job 2 has per-task durations."""
    path = tmp_path / "sparse.txt"
    path.write_text("0 4 1.0\n10 4 0.5\n20 3 0.25 2.0 0.5\n")
    return path


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_idle_cluster_response_is_longest_task_plus_the_policys_hops(policy: str, sparse_trace: Path) -> None:
    """On an idle cluster a job takes exactly its longest task plus its policy's network hops."""
    result = simulate(SimConfig(policy=policy, n_workers=100, trace=sparse_trace, network_delay=DELAY))
    np.testing.assert_array_equal(result.job_arrival, [0.0, 10.0, 20.0])
    np.testing.assert_array_equal(result.job_ideal, [1.0, 0.5, 2.0])
    np.testing.assert_allclose(result.job_response, result.job_ideal + HOPS[policy] * DELAY, rtol=0, atol=1e-9)
    assert np.all(result.task_wait == 0.0)
    assert result.summary(warmup=0.0)["no_queueing"] == 1.0


def test_one_worker_runs_tasks_back_to_back_and_records_their_waits(tmp_path: Path) -> None:
    """On one 1-slot worker a 3-task job runs serially: waits 0, d, 2d; response 3d."""
    path = tmp_path / "serial.txt"
    path.write_text("0 3 1.0\n")
    for policy in ("random", "batch", "sparrow", "omniscient"):
        result = simulate(SimConfig(policy=policy, n_workers=1, trace=path, network_delay=0.0))
        assert sorted(result.task_wait.tolist()) == [0.0, 1.0, 2.0], policy
        assert result.job_response.tolist() == [3.0], policy
        assert result.job_wait.tolist() == [2.0], policy


def test_sparrow_counts_probes_requests_and_cancellations(sparse_trace: Path) -> None:
    """Batch sampling sends ceil(d*m) probes; with cancellation every leftover is cancelled."""
    on = simulate(SimConfig(policy="sparrow", n_workers=100, trace=sparse_trace, probe_ratio=2.0))
    assert on.counters["probes"] == 2 * (4 + 4 + 3)
    assert on.counters["get_task"] - on.counters["get_task_empty"] == 11
    assert on.counters["cancelled"] + on.counters["get_task_empty"] == 11
    off = simulate(SimConfig(policy="sparrow", n_workers=100, trace=sparse_trace, cancellation=False))
    assert off.counters["cancelled"] == 0
    assert off.counters["get_task_empty"] == 11


def test_task_waits_can_be_dropped(sparse_trace: Path) -> None:
    """keep_task_waits=False keeps only the per-job arrays."""
    result = simulate(SimConfig(trace=sparse_trace, keep_task_waits=False))
    assert result.task_wait.size == 0
    assert np.isnan(result.summary(warmup=0.0)["mean_task_wait"])
    assert result.job_response.size == 3
