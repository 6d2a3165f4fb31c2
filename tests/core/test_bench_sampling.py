"""pytest-benchmark cases of probe selection (bench/bench_sampling.py): each kernel variant
and its pure-Python baseline on the same work, checked to agree. CI runs them once
(--benchmark-disable); `python -m pytest tests/core/test_bench_sampling.py --benchmark-enable`
times them."""

import random

import pytest

from bench.bench_sampling import (
    batch_case,
    candidates_case,
    constrained_case,
    per_task_case,
    python_sample_batch,
)

CASES = {
    "batch": lambda: batch_case(10_000, 100, 2.0, n_jobs=200),
    "candidates": lambda: candidates_case(10_000, 1_000, 10, n_jobs=200),
    "per_task": lambda: per_task_case(10_000, 100, n_jobs=50),
    "constrained": lambda: constrained_case(10_000, 100, n_jobs=50),
}
VARIANTS = [(name, variant) for name, build in CASES.items() for variant in build().variants]


@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=[f"{n}-{v}" for n, v in VARIANTS])
def test_sampling_variant(benchmark, name, variant):
    """The variant does the baseline's work: as many jobs and probes."""
    case = CASES[name]()
    benchmark.group = case.name
    out = benchmark(case.variants[variant])
    assert case.summarize(out) == case.summarize(case.variants["python"]())


def test_python_baseline_follows_the_wrap_rule():
    """The baseline places k > n probes as the kernel does: floor(k/n) each, k mod n one more."""
    probes = python_sample_batch(random.Random(0), 6, 14, 2.0)
    assert sorted(probes.count(w) for w in range(6)) == [4, 4, 5, 5, 5, 5]
    assert len(set(python_sample_batch(random.Random(0), 100, 10, 2.0))) == 20
