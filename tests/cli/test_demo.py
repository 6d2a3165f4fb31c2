"""`sparrow local --demo`: a small workload runs to its report, in CI (no terminal); the report's
ideal is the omniscient scheduler replaying the demo's own arrivals and measured durations."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sparrow_experiments.demo_report import build_report
from sparrow_runtime.demo.workload import JobRecord, make_workload

from .conftest import clean_env, run_sparrow


def test_small_demo_prints_progress_and_its_table_without_a_terminal(tmp_path):
    plot = tmp_path / "cdf.png"
    done = run_sparrow(
        "local",
        "--demo",
        "--node-monitors",
        "2",
        "--slots",
        "1",
        "--duration",
        "1",
        "--min-tasks",
        "2",
        "--max-tasks",
        "6",
        "--task-ms",
        "5",
        "--load",
        "0.5",
        "--seed",
        "4",
        "--plot",
        str(plot),
        env=clean_env(tmp_path, CI="true", TERM="dumb"),
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    jobs = int(re.search(r"load 50%, (\d+) jobs of 2-6 tasks", out).group(1))
    assert re.search(rf"jobs {jobs}/{jobs}, ", out)  # the plain progress line at the end
    assert re.search(rf"jobs run\s+.\s+{jobs}\s", out)
    for row in (
        "job response p50",
        "job response p95",
        "job response p99",
        "scheduling delay p50",
        "scheduling delay p99",
        "throughput",
    ):
        assert row in out
    assert re.search(r"job response p50 +[\d.,]+ +[\d.,]+ +[\d.]+x +[\d.,]+ +[\d.]+x", out)  # sparrow, ideal, simulated
    assert "Simulated: the simulator's sparrow policy replaying these jobs" in out
    assert "\x1b[" not in out  # no terminal control codes in CI
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_with_impossible_job_sizes_fails_before_starting(tmp_path):
    done = run_sparrow("local", "--demo", "--min-tasks", "9", "--max-tasks", "3", env=clean_env(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == "sparrow local: error: min_tasks (9) must not exceed max_tasks (3)"


def test_workload_offers_the_requested_load():
    w = make_workload(load=0.6, duration=200.0, slots=8, min_tasks=10, max_tasks=30, task_ms=20.0, seed=1)
    offered = sum(d.sum() for d in w.durations) / (200.0 * 8)
    assert offered == pytest.approx(0.6, rel=0.1)
    assert w.arrivals[0] == 0 and np.all(np.diff(w.arrivals) > 0) and w.arrivals[-1] < 200.0
    assert all(10 <= len(d) <= 30 for d in w.durations)


def _job(submitted: float, starts: list[float], ends: list[float], finished: float, workers=None) -> JobRecord:
    return JobRecord(
        submitted,
        len(starts),
        np.array(starts),
        np.array(ends),
        finished=finished,
        n_done=len(starts),
        workers=None if workers is None else np.array(workers),
    )


def test_ideal_replays_the_arrivals_and_measured_durations_on_the_same_slots():
    # two jobs of two 1-s tasks, one second apart, on 2 slots: the ideal never queues, the measured run did
    records = [_job(10.0, [10.1, 10.1], [11.1, 11.1], 11.2), _job(11.0, [11.5, 12.1], [12.5, 13.1], 13.2)]
    report = build_report(records, node_monitors=1, slots=2)
    assert report.ideal_response.tolist() == pytest.approx([1.0, 1.0])
    assert report.ideal_delay.tolist() == pytest.approx([0.0] * 4)
    assert report.response.tolist() == pytest.approx([1.2, 2.2])
    assert sorted(report.delay.tolist()) == pytest.approx([0.1, 0.1, 0.5, 1.1])
    assert (report.jobs, report.tasks, report.wall) == (2, 4, pytest.approx(3.2))
    # on 1 slot the ideal must queue the second task of each job behind the first
    one_slot = build_report(records, node_monitors=1, slots=1)
    assert one_slot.ideal_response.tolist() == pytest.approx([2.0, 3.0])


def test_the_simulated_column_replays_the_jobs_with_the_delays_they_measured():
    # one slot: job 2 (submitted at 10.05) waits for job 1's task, then starts 0.4 ms after it ends
    records = [_job(10.0, [10.002], [11.002], 11.0026, workers=[5]), _job(10.05, [11.0024], [12.0024], 12.003, [5])]
    report = build_report(records, node_monitors=1, slots=1)
    assert (report.hops.chain_gap, report.hops.idle_start) == pytest.approx((0.0004, 0.002))
    assert report.hops.result == pytest.approx(0.0006)
    assert report.simulated_response.size == 2 * 5  # every seed of the model, pooled
    # the model reproduces the run: job 1 idle_start + 1 s + result; job 2 waits for it, then the chain gap
    assert report.simulated_response.tolist() == pytest.approx([1.0026, 12.003 - 10.05] * 5, abs=1e-9)


def test_records_that_do_not_name_their_workers_get_no_simulated_column():
    report = build_report([_job(10.0, [10.1], [11.1], 11.2)], node_monitors=1, slots=1)
    assert report.hops is None and report.simulated_response.size == 0
