"""Probe selection (csrc/sparrow/sampling.h): the original implementation's placement
properties on the binding and the reference, the binding equal to the reference array for
array (Floyd's algorithm, below32 halves, the wrap rule), and uniformity (chi-square)."""

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import sparrow_core

from . import reference

# ---- scenarios, on the binding and the reference model ----


@pytest.mark.parametrize(
    ("n_tasks", "ratio", "expected"),
    [(100, 1.05, 105), (2, 1.5, 3), (3, 1.5, 5), (0, 2.0, 0), (10, 1.0, 10), (7, 1.1, 8), (10, 1.1, 11), (1, 2.0, 2)],
)
def test_probe_count_is_ceil_of_d_times_m(impl, n_tasks, ratio, expected):
    """ceil(d * m), with float error around integers absorbed (1.05 * 100 -> 105, not 106)."""
    assert impl.probe_count(n_tasks, ratio) == expected


@pytest.mark.parametrize("value", [1, 1.0, 1.05, 2, np.float64(2.5), 1e300])
def test_check_probe_ratio_accepts_what_the_samplers_accept(value):
    """check_probe_ratio returns the ratio as a float exactly when probe_count takes it."""
    assert sparrow_core.check_probe_ratio(value) == float(value)
    sparrow_core.probe_count(0, value)


@pytest.mark.parametrize("value", [0.999, 0, -1.0, float("nan"), float("inf")])
def test_check_probe_ratio_refuses_what_the_samplers_refuse(value):
    """Below 1 or not finite: both check_probe_ratio and probe_count raise ValueError naming the ratio."""
    with pytest.raises(ValueError, match="probe_ratio must be a finite number >= 1"):
        sparrow_core.check_probe_ratio(value)
    with pytest.raises(ValueError, match="probe_ratio must be a finite number >= 1"):
        sparrow_core.probe_count(0, value)


def test_unconstrained_job_probes_distinct_workers(impl):
    """6 workers, 2 tasks, d = 1.5: 3 reservations on 3 distinct workers."""
    for seed in range(50):
        workers = impl.sample_batch(impl.Rng(seed), 6, 2, 1.5)
        assert workers.dtype == np.int64 and len(workers) == 3
        assert len(set(workers.tolist())) == 3 and set(workers.tolist()) <= set(range(6))


def test_more_probes_than_workers_spread_evenly(impl):
    """14 tasks, d = 2, 6 workers: 28 reservations, every worker 4 or 5."""
    workers = impl.sample_batch(impl.Rng(5), 6, 14, 2.0)
    assert len(workers) == 28
    assert sorted(Counter(workers.tolist()).values()) == [4, 4, 5, 5, 5, 5]


@given(seed=st.integers(0, 2**64 - 1), n=st.integers(1, 40), k=st.integers(0, 200))
def test_wrap_rule(seed, n, k):
    """k probes on n workers: floor(k/n) each, and exactly k mod n distinct workers one more."""
    counts = Counter(sparrow_core.sample_batch(sparrow_core.Rng(seed), n, k, 1.0).tolist())
    per_worker = [counts.get(w, 0) for w in range(n)]
    assert sum(per_worker) == k and set(counts) <= set(range(n))
    assert sorted(per_worker) == [k // n] * (n - k % n) + [k // n + 1] * (k % n)


def test_candidates_constrain_the_job(impl):
    """With a job constraint, probes are distinct ids taken from the candidates only."""
    candidates = [17, 3, 99, 42, 8, 61, 70]
    for seed in range(30):
        workers = impl.sample_batch(impl.Rng(seed), 100, 2, 2.0, candidates=candidates).tolist()
        assert len(workers) == 4 and len(set(workers)) == 4 and set(workers) <= set(candidates)


def test_sample_batch_many_offsets_delimit_each_job(impl):
    """Job j's probes are flat[offsets[j]:offsets[j+1]], ceil(d*m_j) distinct workers each."""
    sizes = [3, 0, 1, 50, 7]
    flat, offsets = impl.sample_batch_many(impl.Rng(9), 200, sizes, 1.5)
    assert offsets.tolist() == [0, 5, 5, 7, 82, 93] and len(flat) == 93
    for j in range(len(sizes)):
        job = flat[offsets[j] : offsets[j + 1]].tolist()
        assert len(set(job)) == len(job) and all(0 <= w < 200 for w in job)


def test_per_task_rows_are_distinct(impl):
    """Per-task sampling: an (m, d) array whose rows are d distinct workers."""
    probes = impl.sample_per_task(impl.Rng(4), 10, 6, 3)
    assert probes.shape == (6, 3)
    assert all(len(set(row)) == 3 for row in probes.tolist())


# ---- the binding equals the reference, array for array ----

JOB = st.tuples(st.integers(0, 300), st.integers(0, 120), st.sampled_from([1.0, 1.05, 1.5, 2.0, 2.5, 3.0]))


@given(seed=st.integers(0, 2**64 - 1), jobs=st.lists(JOB, min_size=1, max_size=8))
def test_sample_batch_matches_reference(seed, jobs):
    """A sequence of sample_batch calls on one Rng (odd and even numbers of 32-bit draws,
    so the kept half carries over) gives the reference's arrays exactly."""
    ours, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    for n, m, d in jobs:
        if n == 0 and reference.probe_count(m, d) > 0:
            continue
        assert sparrow_core.sample_batch(ours, n, m, d).tolist() == reference.sample_batch(ref, n, m, d).tolist()
    assert ours.next_u64() == ref.next_u64()


@given(
    seed=st.integers(0, 2**64 - 1),
    n=st.integers(1, 60),
    candidates=st.lists(st.integers(0, 59), unique=True, min_size=1, max_size=30),
    m=st.integers(0, 40),
    d=st.sampled_from([1.0, 1.5, 2.0]),
)
def test_sample_from_candidates_matches_reference(seed, n, candidates, m, d):
    """Sampling among candidates gives the reference's array (and the same errors)."""
    ours, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    if max(candidates) >= n:
        with pytest.raises(ValueError, match="candidates"):
            sparrow_core.sample_batch(ours, n, m, d, candidates=candidates)
        return
    got = sparrow_core.sample_batch(ours, n, m, d, candidates=candidates)
    assert got.tolist() == reference.sample_batch(ref, n, m, d, candidates=candidates).tolist()


@given(seed=st.integers(0, 2**64 - 1), n=st.integers(1, 500), sizes=st.lists(st.integers(0, 80), max_size=20))
def test_sample_batch_many_matches_reference(seed, n, sizes):
    """The batch API draws exactly what the same jobs sampled one by one would."""
    flat, offsets = sparrow_core.sample_batch_many(sparrow_core.Rng(seed), n, np.array(sizes, dtype=np.int64), 2.0)
    ref_flat, ref_offsets = reference.sample_batch_many(reference.Rng(seed), n, sizes, 2.0)
    assert flat.tolist() == ref_flat.tolist() and offsets.tolist() == ref_offsets.tolist()
    one_by_one = sparrow_core.Rng(seed)
    singles = [sparrow_core.sample_batch(one_by_one, n, m, 2.0).tolist() for m in sizes]
    assert flat.tolist() == [w for job in singles for w in job]


@given(seed=st.integers(0, 2**64 - 1), n=st.integers(1, 30), m=st.integers(0, 20), d=st.integers(1, 6))
def test_sample_per_task_matches_reference(seed, n, m, d):
    """Per-task sampling gives the reference's (m, d) array."""
    got = sparrow_core.sample_per_task(sparrow_core.Rng(seed), n, m, d)
    assert got.tolist() == reference.sample_per_task(reference.Rng(seed), n, m, d).tolist()


def test_large_worker_ids_use_the_64_bit_path():
    """Above 2**28 workers Floyd draws with below(); the reference agrees there too."""
    n = 2**40
    got = sparrow_core.sample_batch(sparrow_core.Rng(8), n, 50, 2.0)
    assert got.tolist() == reference.sample_batch(reference.Rng(8), n, 50, 2.0).tolist()
    assert len(set(got.tolist())) == 100 and got.max() < n


# ---- reproducibility ----


@pytest.mark.parametrize(
    "sample",
    [
        lambda rng: sparrow_core.sample_batch(rng, 1000, 20, 2.0),
        lambda rng: sparrow_core.sample_batch(rng, 1000, 20, 2.0, candidates=np.arange(0, 1000, 3)),
        lambda rng: sparrow_core.sample_batch_many(rng, 1000, [5, 20, 9], 2.0)[0],
        lambda rng: sparrow_core.sample_per_task(rng, 1000, 10, 2).ravel(),
        lambda rng: sparrow_core.sample_constrained(rng, 1000, [list(range(0, 500, 7)), None, None], 2.0)[0],
    ],
    ids=["batch", "candidates", "batch_many", "per_task", "constrained"],
)
def test_same_seed_same_probes_different_seed_different(sample):
    """Every sampler is a function of the seed: equal for equal seeds, not for others."""
    assert sample(sparrow_core.Rng(1)).tolist() == sample(sparrow_core.Rng(1)).tolist()
    assert sample(sparrow_core.Rng(1)).tolist() != sample(sparrow_core.Rng(2)).tolist()


# ---- uniformity (chi-square at a fixed seed) ----


def _assert_uniform(counts):
    assert stats.chisquare(counts).pvalue > 0.001, counts


def test_sample_batch_is_uniform_over_workers():
    """Each of 50 workers is probed equally often over 5,000 jobs of 10 tasks (d = 2)."""
    flat, _ = sparrow_core.sample_batch_many(sparrow_core.Rng(100), 50, np.full(5000, 10), 2.0)
    _assert_uniform(np.bincount(flat, minlength=50))


def test_sample_batch_is_uniform_over_subsets():
    """Every 3-subset of 7 workers is equally likely (Floyd's algorithm, not just marginals)."""
    flat, _ = sparrow_core.sample_batch_many(sparrow_core.Rng(101), 7, np.full(35_000, 3), 1.0)
    subsets = Counter(tuple(sorted(job)) for job in flat.reshape(-1, 3).tolist())
    assert len(subsets) == 35
    _assert_uniform([subsets[s] for s in itertools.combinations(range(7), 3)])


def test_wrapped_extra_probes_are_uniform():
    """When k > n, which workers get the extra probe is uniform too."""
    flat, _ = sparrow_core.sample_batch_many(sparrow_core.Rng(102), 6, np.full(10_000, 8), 1.0)
    _assert_uniform(np.bincount(flat, minlength=6) - 10_000)


def test_sampling_from_candidates_is_uniform():
    """Among 20 candidates of 1,000 workers, each is probed equally often."""
    rng = sparrow_core.Rng(103)
    candidates = np.arange(3, 1000, 50)
    counts = Counter()
    for _ in range(3000):
        counts.update(sparrow_core.sample_batch(rng, 1000, 3, 2.0, candidates=candidates).tolist())
    assert set(counts) == set(candidates.tolist())
    _assert_uniform([counts[c] for c in candidates.tolist()])


def test_sample_per_task_is_uniform_and_rows_independent():
    """Per-task probes are uniform over workers, and over the pairs making a row (as sets:
    Floyd's algorithm makes uniform subsets, not uniform orders)."""
    probes = sparrow_core.sample_per_task(sparrow_core.Rng(104), 8, 40_000, 2)
    _assert_uniform(np.bincount(probes.ravel(), minlength=8))
    pairs = Counter(tuple(sorted(row)) for row in probes.tolist())
    assert len(pairs) == 28  # C(8, 2), never a worker twice in a row
    _assert_uniform(list(pairs.values()))


@given(seed=st.integers(0, 2**64 - 1), sizes=st.lists(st.integers(0, 30), max_size=10))
def test_sample_batch_many_from_candidates_matches_single_calls(seed, sizes):
    """With candidates, the batch API draws exactly what per-job sample_batch calls would."""
    candidates = np.array([3, 17, 4, 40, 22, 9, 31], dtype=np.int64)
    flat, offsets = sparrow_core.sample_batch_many(sparrow_core.Rng(seed), 50, sizes, 2.0, candidates=candidates)
    one_by_one = sparrow_core.Rng(seed)
    singles = [sparrow_core.sample_batch(one_by_one, 50, m, 2.0, candidates=candidates).tolist() for m in sizes]
    assert flat.tolist() == [w for job in singles for w in job]
    assert np.diff(offsets).tolist() == [len(job) for job in singles]


@pytest.mark.parametrize(
    "candidates, message",
    [([1, 1], "appears twice"), ([1, 50], "out of range"), ([], "candidates")],
)
def test_sample_batch_many_rejects_bad_candidates(candidates, message):
    """Duplicate, out-of-range and empty candidate lists are refused, naming candidates."""
    with pytest.raises(ValueError, match=message):
        sparrow_core.sample_batch_many(sparrow_core.Rng(1), 50, [2, 3], 2.0, candidates=candidates)
