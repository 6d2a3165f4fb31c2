"""benchtools/floor_gap.py: the floor's replay with a per-task gap grows with the gap, and is the floor at none."""

from itertools import pairwise

import pytest

from bench.bench_peers import load_arrivals
from benchtools.floor_gap import gap_ratios


def test_a_longer_per_task_gap_costs_more_and_none_costs_nothing():
    """4 s of bench_peers' arrivals: ratio 1.0 at g = 0, rising with g; a per-job constant costs its share."""
    floor, gaps, constants = gap_ratios(load_arrivals(4.0, seed=1))
    assert floor > 0 and gaps[0.0] == pytest.approx(1.0)
    ratios = list(gaps.values())
    assert all(a <= b for a, b in pairwise(ratios)) and ratios[-1] > 1.2
    assert constants[1.0] == pytest.approx((floor + 1.0) / floor)
