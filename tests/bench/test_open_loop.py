"""bench/open_loop.py: an open-loop load on a real LocalCluster against its zero-overhead floor."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_runtime, open_loop
from bench.open_loop import LoadSpec, run_on_local_cluster


def test_workload_is_poisson_jobs_of_constant_tasks() -> None:
    """Jobs of tasks_per_job tasks of exactly task_ms, arriving within `seconds`, the first at 0."""
    workload = LoadSpec(seconds=2.0, seed=3).workload()
    assert workload.arrivals[0] == 0 and np.all(np.diff(workload.arrivals) >= 0) and workload.arrivals[-1] < 2.0
    assert all(d.tolist() == [0.01] * 10 for d in workload.durations)
    assert 10 <= len(workload.arrivals) <= 60  # 16 jobs/s expected


def test_a_short_run_is_measured_against_its_floor() -> None:
    """1.5 s at 80% of 2 node monitors x 1 slot: every job ran; responses and the floor's both
    exceed the task's 10 ms; the runtime's median is above the floor's (it adds messages)."""
    spec = LoadSpec(seconds=1.5, seed=1)
    run = run_on_local_cluster(spec, executor="thread")
    assert run.report.jobs == len(spec.workload().arrivals) and run.report.failed == 0
    assert run.report.tasks == 10 * run.report.jobs
    assert np.all(run.report.response >= 0.01) and np.all(run.report.ideal_response >= 0.01)
    runtime, floor = run.beyond_task_ms(50)
    assert runtime > floor >= 0 and run.overhead_ms(50) == pytest.approx(runtime - floor)


def test_without_the_demo_machinery_the_benchmark_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a package lacking sparrow_runtime.demo, the open-loop run raises NotImplementedError and
    RuntimeAtLoad hands asv a skip (NotImplementedError in setup), not a failure."""
    monkeypatch.setattr(open_loop, "make_workload", None)
    with pytest.raises(NotImplementedError):
        run_on_local_cluster(LoadSpec())
    benchmark = bench_runtime.RuntimeAtLoad()
    figures = benchmark.setup_cache()
    with pytest.raises(NotImplementedError, match=r"sparrow_runtime\.demo"):
        benchmark.setup(figures)
