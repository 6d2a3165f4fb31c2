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
    job_case,
    per_task_case,
    prefer_case,
    python_sample_batch,
    python_sample_job,
    python_sample_prefer,
)

CASES = {
    "batch": lambda: batch_case(10_000, 100, 2.0, n_jobs=200),
    "candidates": lambda: candidates_case(10_000, 1_000, 10, n_jobs=200),
    "per_task": lambda: per_task_case(10_000, 100, n_jobs=50),
    "constrained": lambda: constrained_case(10_000, 100, n_jobs=50),
    "job": lambda: job_case(10_000, 100, 1_000, n_jobs=50),
    "prefer": lambda: prefer_case(10_000, 100, n_jobs=50),
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


def test_python_job_baseline_keeps_every_probe_inside_the_job_constraint():
    """The sample_job baseline does the kernel's work: constrained probes where both constraints hold,
    the others on distinct job candidates apart from them."""
    workers, tasks = python_sample_job(random.Random(1), list(range(10)), [[3, 40], None, [5, 6, 70], None], 2.0)
    by_task = {t: [w for w, u in zip(workers, tasks) if u == t] for t in set(tasks)}
    assert by_task[0] == [3, 3] and sorted(by_task[2]) == [5, 6]
    assert len(set(by_task[-1])) == 4 and set(by_task[-1]) <= set(range(10)) - {3, 5, 6}


def test_python_prefer_baseline_probes_one_preferred_worker_then_one_elsewhere():
    """The prefer baseline does the kernel's work at d = 2: per task one of its preferred workers, then
    one it does not prefer."""
    workers, tasks = python_sample_prefer(random.Random(2), 50, [[3, 4], [7]], 2.0)
    assert tasks == [0, 0, 1, 1] and workers[0] in {3, 4} and workers[1] not in {3, 4}
    assert workers[2] == 7 and workers[3] != 7
