"""bench/bench_peers.py on tiny sizes: the ProcessPoolExecutor row, the 10 ms-task load case's pieces,
and Dask's side (skipped without the optional `peers` extra)."""

import math

import numpy as np
import pytest

from bench.bench_peers import TASK_S, LoadFigures, load_arrivals, pool_load, pool_run_once


def test_pool_run_once_gives_positive_finite_throughput_and_latencies():
    rate, p50_ms, p99_ms = pool_run_once(n_tasks=200, n_jobs=5)
    assert all(math.isfinite(x) and x > 0 for x in (rate, p50_ms, p99_ms))
    assert p50_ms <= p99_ms


def test_load_arrivals_are_the_same_for_every_system_and_offer_80_percent_of_2_slots():
    a, b = load_arrivals(200.0, seed=3), load_arrivals(200.0, seed=3)
    assert np.array_equal(a, b)
    assert len(a) * 10 * TASK_S / (200.0 * 2) == pytest.approx(0.8, rel=0.1)  # jobs of 10 tasks of 10 ms


def test_figures_beyond_the_task_subtract_its_10_ms():
    figures = LoadFigures(rate=190.0, response=np.array([0.010, 0.020, 0.030]))
    assert figures.beyond_task_ms(50) == pytest.approx(10.0)
    assert figures.beyond_task_ms(100) == pytest.approx(20.0)


def test_pool_load_records_one_response_per_job_at_least_its_task():
    figures = pool_load(load_arrivals(0.3, seed=0))
    assert figures.rate > 0
    assert figures.response.size >= 1 and np.all(figures.response >= TASK_S)


def test_dask_run_once_gives_positive_finite_throughput_and_latencies():
    pytest.importorskip("distributed")
    from bench.bench_peers import dask_run_once

    rate, p50_ms, p99_ms = dask_run_once(n_tasks=200, n_jobs=5)
    assert all(math.isfinite(x) and x > 0 for x in (rate, p50_ms, p99_ms))
    assert p50_ms <= p99_ms


def test_the_submit_loops_give_positive_rates_and_the_table_their_ratio():
    """bench/submit_loop.py on tiny sizes, Sparrow's side on thread executors, and bench_peers' row."""
    from bench.bench_peers import submit_table
    from bench.submit_loop import pool_submit_loop, sparrow_submit_loop

    ours, pool = sparrow_submit_loop("thread", n_tasks=50), pool_submit_loop(n_tasks=50)
    assert ours > 0 and pool > 0
    table = submit_table({"Sparrow": [ours, ours], "ProcessPoolExecutor(2)": [pool, pool]})
    assert table.row_count == 3 and f"{ours / pool:.2f}" in str(table.columns[1]._cells[-1])


def test_the_pipelined_runs_take_the_node_monitors_pipeline_option():
    """bench_peers --pipeline-depth N (0: off): Sparrow's clusters are made with LocalCluster's pipelining options
    (None: the build's default, 0: pipeline="off", N: pipelined N deep), and they run."""
    from bench.cluster_options import pipelining

    assert (pipelining(None), pipelining(0), pipelining(16)) == (
        {},
        {"pipeline": "off"},
        {"pipeline_depth": 16},
    )
    from bench.bench_runtime import run_once
    from bench.submit_loop import sparrow_submit_loop

    assert sparrow_submit_loop("thread", n_tasks=50, pipeline=16) > 0
    assert sparrow_submit_loop("thread", n_tasks=50, pipeline=0) > 0  # off
    rate, p50_ms, p99_ms = run_once("thread", 200, 5, pipeline=16)
    assert all(math.isfinite(x) and x > 0 for x in (rate, p50_ms, p99_ms))
