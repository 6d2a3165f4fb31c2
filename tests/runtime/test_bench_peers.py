"""bench/bench_peers.py's Dask side on tiny sizes (skipped without the optional `peers` extra)."""

import math

import pytest

from bench.bench_peers import dask_run_once

pytest.importorskip("distributed")


def test_dask_run_once_gives_positive_finite_throughput_and_latencies():
    rate, p50_ms, p99_ms = dask_run_once(n_tasks=200, n_jobs=5)
    assert all(math.isfinite(x) and x > 0 for x in (rate, p50_ms, p99_ms))
    assert p50_ms <= p99_ms
