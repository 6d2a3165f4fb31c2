"""pytest-benchmark cases of the reservation queues (bench/bench_queue.py), and a check that
the pure-Python baselines make the kernel's decisions (so the ratios compare like with like).
CI runs them once (--benchmark-disable); add --benchmark-enable to time them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sparrow_core
from bench.bench_queue import POLICIES, PYTHON_QUEUES, push_pop_case

VARIANTS = [(policy, variant) for policy in POLICIES for variant in ("batch", "calls", "python")]


@pytest.mark.parametrize(("policy", "variant"), VARIANTS, ids=[f"{p}-{v}" for p, v in VARIANTS])
def test_push_pop_variant(benchmark, policy, variant):
    """100 users, 10,000 reservations pushed then popped: every variant pops them all."""
    case = push_pop_case(policy, 100, n_pushes=10_000)
    benchmark.group = case.name
    out = benchmark(case.variants[variant])
    assert case.summarize(out) == case.summarize(case.variants["python"]())


OPERATION = st.one_of(
    st.tuples(st.just("push"), st.integers(0, 6), st.integers(0, 3)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("cancel"), st.integers(0, 6)),
)


@pytest.mark.parametrize("policy", POLICIES)
@given(ops=st.lists(OPERATION, max_size=60))
def test_python_baseline_decides_like_the_kernel(policy, ops):
    """Same pushes, pops and cancels: the baseline pops exactly what the kernel pops and
    keeps the same per-user counts."""
    kernel, python = sparrow_core.ReservationQueue(policy), PYTHON_QUEUES[policy]()
    for op in ops:
        if op[0] == "push":
            job, priority = op[1], op[2]
            user = job % 3  # one user per job
            kernel.push(job, user, priority)
            python.push(job, user, priority)
        elif op[0] == "cancel":
            assert kernel.cancel(op[1]) == python.cancel(op[1])
        else:
            got, expected = kernel.pop(), python.pop()
            assert (got is None) == (expected is None)
            if got is not None:
                assert (got.job_id, got.user, got.priority) == expected
        assert kernel.counts() == {u: c for u, c in python.counts.items() if c}
