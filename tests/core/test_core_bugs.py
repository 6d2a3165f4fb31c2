"""Defects of the binding found by this suite, one failing test each, as reported to the
lead in /tmp/core-bugs.md: each test states the behaviour the contract asks for."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sparrow_core as sc


@pytest.mark.parametrize(
    "call",
    [
        lambda: sc.probe_count(10, 1e30),
        lambda: sc.probe_count(2**62, 4.0),
        lambda: sc.sample_batch(sc.Rng(1), 10, 2**62, 4.0),
        lambda: sc.sample_batch_many(sc.Rng(1), 10, [2**62], 4.0),
    ],
    ids=["probe_count ratio", "probe_count n_tasks", "sample_batch", "sample_batch_many"],
)
def test_probe_count_beyond_int64_is_rejected_naming_the_arguments(call):
    """d * m beyond the int64 range is a ValueError naming probe_ratio / n_tasks, not the
    wrapped INT64_MIN (sampling.h probe_count casts an out-of-range double: undefined)."""
    with pytest.raises(ValueError, match="probe_ratio|n_tasks"):
        call()


def test_per_task_probe_total_overflow_is_rejected():
    """n_tasks * d beyond int64 is a ValueError; unchecked, the product wraps to 0, passes the
    size check and the kernel tries to write 2**64 probes (run under a 1 GiB memory limit)."""
    script = textwrap.dedent(
        """
        import resource, sparrow_core
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        try:
            sparrow_core.sample_per_task(sparrow_core.Rng(1), 1, 2**33, 2**31)
        except Exception as e:
            print(type(e).__name__, e)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("ValueError") and ("n_tasks" in out or " d " in out or "d must" in out), out


def test_get_task_many_with_an_unknown_job_consumes_nothing():
    """A rejected get_task_many must not launch tasks whose answers the caller never sees
    (the nogil loop applies the requests before the bad one, then raises)."""
    t = sc.TaskTable()
    t.add_job(1, 2)
    t.reserve(1, [0, 1, 2])
    with pytest.raises(ValueError, match="job_id"):
        t.get_task_many([1, 99], [0, 0])
    assert t.n_launched(1) == 0 and t.outstanding(1) == 3


def test_rejected_push_many_queues_nothing():
    """A push_many rejected for one reservation (job 5 already queued for user 1) leaves the
    queue as it was, instead of keeping the reservations before the bad one."""
    q = sc.ReservationQueue("fifo")
    q.push(5, 1)
    with pytest.raises(ValueError, match="job"):
        q.push_many([1, 2, 5], [0, 0, 2])
    assert len(q) == 1 and q.counts() == {1: 1}


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda q: q.push(1, "bob"), ["'alice'", "'bob'"]),
        (lambda q: q.refund("alice"), ["'alice'"]),
    ],
    ids=["push conflict", "refund"],
)
def test_queue_errors_name_users_by_value(call, names):
    """Error messages show the user values the caller passed, not internal user numbers
    ("user 0 ... not user 1" says nothing to a caller who pushed 'alice' and 'bob')."""
    q = sc.ReservationQueue("fair")
    q.push(1, "alice")
    with pytest.raises(ValueError) as caught:
        call(q)
    assert all(name in str(caught.value) for name in names), str(caught.value)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: sc.ReservationQueue("fifo").push(1, ["alice"]), "user"),
        (lambda: sc.ReservationQueue("fifo").count(["alice"]), "user"),
        (lambda: sc.ReservationQueue("fair").refund(["alice"]), "user"),
        (lambda: sc.ReservationQueue(["fifo"]), "policy"),
    ],
    ids=["push", "count", "refund", "policy"],
)
def test_unhashable_arguments_are_a_typeerror_naming_them(call, name):
    """An unhashable user or policy gives a TypeError naming the argument, not Python's bare
    "unhashable type: 'list'" from the dict lookup done before the type check."""
    with pytest.raises(TypeError, match=name):
        call()


def test_numpy_integer_users_are_the_same_users_as_ints():
    """pop_many hands users back as numpy int64: pushing one back must work and be the same
    user as the Python int (the contract allows any hashable user)."""
    q = sc.ReservationQueue("fair")
    q.push(1, np.int64(3))
    q.push(2, 3)
    assert q.counts() == {3: 2} and q.pop().user == 3
