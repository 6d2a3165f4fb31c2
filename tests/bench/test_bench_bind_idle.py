"""bench/bench_bind_idle.py on tiny sizes: every figure has a positive finite value per side and round."""

import math

import pytest

from bench.bench_bind_idle import run


@pytest.mark.slow
def test_one_round_gives_each_figure_for_both_clusters_and_the_pool():
    """One round of 2 jobs per size: p50 and CPU per job for off, on and the pool; no load case asked."""
    figures = run(rounds=1, jobs=2, depth=0, load_seconds=0)
    assert set(figures) == {
        f"{size}-task {what}/{side}"
        for size in (1, 10)
        for what in ("p50 ms", "CPU ms/job")
        for side in ("off", "on", "pool")
    }
    assert all(len(v) == 1 and math.isfinite(v[0]) and v[0] > 0 for v in figures.values())
