"""Replaying a run on the simulator (sparrow_experiments.replay): the hops measured from a run's own
timestamps, how they become simulator delays, and the model reproducing them exactly where the
schedule is forced (one slot, no queueing from other jobs)."""

from __future__ import annotations

import numpy as np
import pytest

from sparrow_experiments.replay import CHAIN_LIMIT, Hops, ReplayJob, ideal, measure_hops, model, write_trace
from sparrow_runtime.demo.workload import JobRecord


def _job(submitted: float, starts, ends, workers, finished: float) -> JobRecord:
    return JobRecord(
        submitted,
        len(starts),
        np.array(starts),
        np.array(ends),
        finished=finished,
        n_done=len(starts),
        workers=np.array(workers),
    )


def test_hops_are_the_means_of_chain_gaps_idle_starts_and_result_hops():
    records = [
        _job(0.000, [0.002, 0.003], [0.100, 0.100], [1, 2], finished=0.1006),  # both slots idle
        _job(0.050, [0.1004, 0.1006], [0.200, 0.210], [1, 2], finished=0.2108),  # queued: chain gaps 0.4, 0.6 ms
        _job(0.150, [0.300], [0.350], [1], finished=0.3507),  # waited 100 ms beyond its slot's end: not a chain
    ]
    hops = measure_hops(records)
    assert hops.chain_gap == pytest.approx(0.0005)
    assert hops.idle_start == pytest.approx(0.0025)
    assert hops.result == pytest.approx(0.0007)
    assert CHAIN_LIMIT < 0.300 - 0.200


def test_the_chain_gap_is_the_round_trip_and_the_idle_start_sets_the_submission():
    hops = Hops(chain_gap=0.0006, idle_start=0.0025, result=0.0007)
    assert hops.sim_delays() == pytest.approx({"network_delay": 0.0003, "submit_delay": 0.0016, "result_delay": 0.0007})
    assert hops.outside_queue == pytest.approx(0.0025)  # submission + reservation + GetTask round trip
    assert Hops(chain_gap=0.004, idle_start=0.001, result=0.0).submit == 0.0  # never negative


def test_records_without_workers_or_without_queueing_cannot_be_measured():
    without = JobRecord(0.0, 1, np.array([0.001]), np.array([0.01]), finished=0.011, n_done=1)
    with pytest.raises(ValueError, match="do not say which worker"):
        measure_hops([without])
    with pytest.raises(ValueError, match="too few tasks"):
        measure_hops([_job(0.0, [0.001], [0.01], [1], finished=0.011)])  # nothing queued: no chain gap


@pytest.mark.parametrize("durations", [[0.05], [0.05, 0.03], [0.02, 0.04, 0.01]])
def test_the_model_reproduces_the_measured_hops_exactly_on_one_slot(durations):
    """One job on 1 node monitor x 1 slot: its first task starts idle_start after arrival, each next one
    chain_gap after the previous ends, and the outcome reaches the client `result` after the last."""
    hops = Hops(chain_gap=0.0006, idle_start=0.0025, result=0.0007)
    (result, *_) = model([ReplayJob(0.0, np.array(durations))], hops, node_monitors=1, slots=1)
    expected = hops.idle_start + sum(durations) + (len(durations) - 1) * hops.chain_gap + hops.result
    assert result.job_response.tolist() == pytest.approx([expected], abs=1e-12)


def test_with_no_delays_the_model_on_an_idle_cluster_is_the_ideal():
    jobs = [
        ReplayJob(0.0, np.array([0.05, 0.03])),
        ReplayJob(1.0, np.array([0.02])),
        ReplayJob(1.0, np.array([0.04]), parents=(1,)),
    ]
    zero = Hops(chain_gap=0.0, idle_start=0.0, result=0.0)
    best = ideal(jobs, node_monitors=2, slots=1)
    assert best.job_response.tolist() == pytest.approx([0.05, 0.02, 0.06])  # the stage waits for its parent
    for result in model(jobs, zero, node_monitors=2, slots=1):
        assert result.job_response.tolist() == pytest.approx(best.job_response.tolist(), abs=1e-12)


def test_a_trace_names_each_jobs_parents_by_number(tmp_path):
    path = tmp_path / "run.trace"
    write_trace([ReplayJob(0.5, np.array([0.1, 0.2])), ReplayJob(0.5, np.array([0.3]), parents=(0,))], path)
    assert path.read_text().splitlines() == [
        "0.500000000 2 0.100000000 0.200000000",
        "0.500000000 1 0.300000000 after=0",
    ]
