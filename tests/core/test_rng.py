"""Rng (csrc/sparrow/rng.h): the binding's streams equal the reference xoshiro256** bit for
bit, the reference matches published constants, and the same seed gives the same stream."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import sparrow_core

from .reference import rng as ref_rng

SEEDS = [0, 1, 42, 2**32, 2**63, 2**64 - 1]
# Bounds where Lemire's rejection step matters: 2**62 + 1 rejects about a quarter of draws.
BOUNDS = [1, 2, 3, 10, 1000, 2**31 - 1, 2**32 + 7, 2**62 + 1, 3 * 2**61, 2**63 - 1]


def test_reference_splitmix64_known_answer():
    """splitmix64 from state 0 gives the published first output 0xE220A8397B1DCDAF."""
    assert ref_rng._splitmix64(0)[1] == 0xE220A8397B1DCDAF


def test_reference_xoshiro256starstar_known_answer():
    """xoshiro256** from state (1, 2, 3, 4) gives the reference implementation's outputs."""
    rng = ref_rng.Rng(0)
    rng._s = [1, 2, 3, 4]
    assert [rng.next_u64() for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]


@pytest.mark.parametrize("seed", SEEDS)
def test_next_u64_matches_reference(seed):
    """The raw 64-bit stream is xoshiro256** seeded through splitmix64."""
    ours, ref = sparrow_core.Rng(seed), ref_rng.Rng(seed)
    assert [ours.next_u64() for _ in range(500)] == [ref.next_u64() for _ in range(500)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", BOUNDS)
def test_below_matches_reference(seed, n):
    """below(n) is Lemire's multiply-shift with the same rejections, draw for draw."""
    ours, ref = sparrow_core.Rng(seed), ref_rng.Rng(seed)
    assert [ours.below(n) for _ in range(300)] == [ref.below(n) for _ in range(300)]
    assert ours.next_u64() == ref.next_u64()  # and consumed the same number of outputs


@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_exponential_spawn_match_reference(seed):
    """uniform(), exponential() and spawn() give the reference's values exactly."""
    ours, ref = sparrow_core.Rng(seed), ref_rng.Rng(seed)
    assert [ours.uniform() for _ in range(200)] == [ref.uniform() for _ in range(200)]
    assert [ours.exponential(2.5) for _ in range(200)] == [ref.exponential(2.5) for _ in range(200)]
    child, ref_child = ours.spawn(), ref.spawn()
    assert [child.next_u64() for _ in range(50)] == [ref_child.next_u64() for _ in range(50)]
    assert ours.next_u64() == ref.next_u64()


@given(seed=st.integers(0, 2**64 - 1), bounds=st.lists(st.integers(1, 2**63 - 1), min_size=1, max_size=30))
def test_mixed_calls_match_reference(seed, bounds):
    """Any interleaving of below and next_u64 keeps the two streams equal."""
    ours, ref = sparrow_core.Rng(seed), ref_rng.Rng(seed)
    for n in bounds:
        assert ours.below(n) == ref.below(n)
        if n % 3 == 0:
            assert ours.next_u64() == ref.next_u64()


def test_seed_accepts_numpy_integers():
    """A numpy integer seed is the same seed as the Python int."""
    assert sparrow_core.Rng(np.uint64(2**64 - 1)).next_u64() == sparrow_core.Rng(2**64 - 1).next_u64()


def test_same_seed_same_stream_different_seeds_differ():
    """Reproducibility from a seed; nearby seeds give unrelated streams."""
    draws = {seed: [sparrow_core.Rng(seed).next_u64() for _ in range(1)] for seed in range(100)}
    assert draws[7] == [sparrow_core.Rng(7).next_u64()]
    assert len({tuple(v) for v in draws.values()}) == 100


def test_spawn_gives_a_stream_apart_from_the_parent():
    """A child stream shares no prefix with its parent's continuation."""
    parent = sparrow_core.Rng(3)
    child = parent.spawn()
    assert {child.next_u64() for _ in range(100)}.isdisjoint({parent.next_u64() for _ in range(100)})


def test_below_is_uniform_chi_square():
    """Counts of below(10) over 100,000 draws pass a chi-square test (p > 0.001)."""
    rng = sparrow_core.Rng(11)
    counts = np.bincount([rng.below(10) for _ in range(100_000)], minlength=10)
    assert stats.chisquare(counts).pvalue > 0.001


def test_uniform_and_exponential_distributions():
    """uniform() lies in [0, 1) and passes a KS test; exponential(mean) has that mean."""
    rng = sparrow_core.Rng(12)
    u = np.array([rng.uniform() for _ in range(20_000)])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 0.001
    e = np.array([rng.exponential(4.0) for _ in range(20_000)])
    assert e.min() >= 0.0
    assert abs(e.mean() - 4.0) < 4 * 4.0 / math.sqrt(e.size)
    assert stats.kstest(e, "expon", args=(0, 4.0)).pvalue > 0.001
