"""Every bad-argument path of the binding: the exception type (ValueError for a bad value,
TypeError for a bad type) and a message naming the argument; a rejected call changes nothing."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sparrow_core as sc


def rng():
    return sc.Rng(1)


def fair_queue():
    q = sc.ReservationQueue("fair")
    q.push(1, "a")
    return q


def table():
    t = sc.TaskTable()
    t.add_job(1, 2, [[3, 4], None])
    t.reserve(1, [3, 5])
    return t


CASES = {
    # Rng
    "seed str": (lambda: sc.Rng("1"), TypeError, "seed"),
    "seed float": (lambda: sc.Rng(1.0), TypeError, "seed"),
    "seed bool": (lambda: sc.Rng(True), TypeError, "seed"),
    "seed negative": (lambda: sc.Rng(-1), ValueError, "seed"),
    "seed too large": (lambda: sc.Rng(2**64), ValueError, "seed"),
    "below zero": (lambda: rng().below(0), ValueError, "n"),
    "below negative": (lambda: rng().below(-3), ValueError, "n"),
    "below str": (lambda: rng().below("3"), TypeError, "n"),
    "below too large": (lambda: rng().below(2**64), ValueError, "n"),
    "exponential zero mean": (lambda: rng().exponential(0.0), ValueError, "mean"),
    "exponential nan mean": (lambda: rng().exponential(math.nan), ValueError, "mean"),
    "exponential str mean": (lambda: rng().exponential("1"), TypeError, "mean"),
    # probe_count
    "probe_count negative n_tasks": (lambda: sc.probe_count(-1, 2.0), ValueError, "n_tasks"),
    "probe_count float n_tasks": (lambda: sc.probe_count(1.5, 2.0), TypeError, "n_tasks"),
    "probe_count ratio below 1": (lambda: sc.probe_count(10, 0.99), ValueError, "probe_ratio"),
    "probe_count ratio nan": (lambda: sc.probe_count(10, math.nan), ValueError, "probe_ratio"),
    "probe_count ratio inf": (lambda: sc.probe_count(10, math.inf), ValueError, "probe_ratio"),
    "probe_count ratio str": (lambda: sc.probe_count(10, "2"), TypeError, "probe_ratio"),
    # check_probe_ratio
    "check_probe_ratio below 1": (
        lambda: sc.check_probe_ratio(0.5, "d_of_job"),
        ValueError,
        "d_of_job must be a finite",
    ),
    "check_probe_ratio nan": (lambda: sc.check_probe_ratio(math.nan), ValueError, "probe_ratio must be a finite"),
    "check_probe_ratio inf": (lambda: sc.check_probe_ratio(math.inf), ValueError, "probe_ratio"),
    "check_probe_ratio str": (lambda: sc.check_probe_ratio("2", "d"), TypeError, "d must be a number"),
    "check_probe_ratio bool": (lambda: sc.check_probe_ratio(True), TypeError, "probe_ratio must be a number"),
    "check_probe_ratio None": (lambda: sc.check_probe_ratio(None), TypeError, "probe_ratio"),
    # sample_job (the rest: tests/core/test_job_probes.py)
    "sample_job negative n_tasks": (lambda: sc.sample_job(rng(), 10, -1, 2.0), ValueError, "n_tasks"),
    "sample_job negative n_workers": (lambda: sc.sample_job(rng(), -1, 1, 2.0), ValueError, "n_workers"),
    "sample_job zero n_workers": (lambda: sc.sample_job(rng(), 0, 1, 2.0), ValueError, "n_workers"),
    "sample_job ratio below 1": (lambda: sc.sample_job(rng(), 10, 1, 0.5), ValueError, "probe_ratio"),
    "sample_job str n_tasks": (lambda: sc.sample_job(rng(), 10, "1", 2.0), TypeError, "n_tasks"),
    "sample_job float candidates": (lambda: sc.sample_job(rng(), 10, 1, 2.0, [1.5]), TypeError, "candidates"),
    "sample_job str task entry": (
        lambda: sc.sample_job(rng(), 10, 1, 2.0, None, ["ab"]),
        TypeError,
        r"task_candidates\[0\]",
    ),
    "sample_job rng None": (lambda: sc.sample_job(None, 10, 1, 2.0), TypeError, "rng"),
    # sample_batch
    "sample_batch rng None": (lambda: sc.sample_batch(None, 10, 2, 2.0), TypeError, "rng"),
    "sample_batch rng of another kind": (
        lambda: sc.sample_batch(np.random.default_rng(1), 10, 2, 2.0),
        TypeError,
        "rng",
    ),
    "sample_batch negative n_workers": (lambda: sc.sample_batch(rng(), -1, 2, 2.0), ValueError, "n_workers"),
    "sample_batch zero n_workers": (lambda: sc.sample_batch(rng(), 0, 2, 2.0), ValueError, "n_workers"),
    "sample_batch str n_workers": (lambda: sc.sample_batch(rng(), "10", 2, 2.0), TypeError, "n_workers"),
    "sample_batch negative n_tasks": (lambda: sc.sample_batch(rng(), 10, -2, 2.0), ValueError, "n_tasks"),
    "sample_batch str n_tasks": (lambda: sc.sample_batch(rng(), 10, "2", 2.0), TypeError, "n_tasks"),
    "sample_batch ratio below 1": (lambda: sc.sample_batch(rng(), 10, 2, 0.5), ValueError, "probe_ratio"),
    "sample_batch ratio nan": (lambda: sc.sample_batch(rng(), 10, 2, math.nan), ValueError, "probe_ratio"),
    "sample_batch ratio str": (lambda: sc.sample_batch(rng(), 10, 2, "2"), TypeError, "probe_ratio"),
    "candidates duplicate": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[1, 1]), ValueError, "candidates"),
    "candidates out of range": (
        lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[1, 10]),
        ValueError,
        "candidates",
    ),
    "candidates negative": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[-1, 2]), ValueError, "candidates"),
    "candidates empty": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[]), ValueError, "candidates"),
    "candidates 2-d": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[[1, 2]]), ValueError, "candidates"),
    "candidates floats": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates=[1.0, 2.0]), TypeError, "candidates"),
    "candidates str": (lambda: sc.sample_batch(rng(), 10, 2, 1.0, candidates="12"), TypeError, "candidates"),
    # sample_batch_many
    "many negative n_workers": (lambda: sc.sample_batch_many(rng(), -1, [2], 2.0), ValueError, "n_workers"),
    "many zero n_workers": (lambda: sc.sample_batch_many(rng(), 0, [0, 2], 2.0), ValueError, "n_workers"),
    "many negative size": (lambda: sc.sample_batch_many(rng(), 10, [2, -1], 2.0), ValueError, "n_tasks"),
    "many float sizes": (lambda: sc.sample_batch_many(rng(), 10, [1.5], 2.0), TypeError, "n_tasks"),
    "many 2-d sizes": (lambda: sc.sample_batch_many(rng(), 10, [[1, 2]], 2.0), ValueError, "n_tasks"),
    "many ratio below 1": (lambda: sc.sample_batch_many(rng(), 10, [1], 0.0), ValueError, "probe_ratio"),
    # sample_per_task
    "per_task zero d": (lambda: sc.sample_per_task(rng(), 10, 2, 0), ValueError, "d"),
    "per_task float d": (lambda: sc.sample_per_task(rng(), 10, 2, 1.5), TypeError, "d"),
    "per_task negative n_tasks": (lambda: sc.sample_per_task(rng(), 10, -2, 1), ValueError, "n_tasks"),
    "per_task negative n_workers": (lambda: sc.sample_per_task(rng(), -10, 2, 1), ValueError, "n_workers"),
    "per_task zero n_workers": (lambda: sc.sample_per_task(rng(), 0, 2, 1), ValueError, "n_workers"),
    # sample_constrained
    "constrained not a sequence": (lambda: sc.sample_constrained(rng(), 10, 5, 2.0), TypeError, "task_candidates"),
    "constrained str entry": (
        lambda: sc.sample_constrained(rng(), 10, ["ab"], 2.0),
        TypeError,
        r"task_candidates\[0\]",
    ),
    "constrained duplicate": (lambda: sc.sample_constrained(rng(), 10, [[1, 1]], 2.0), ValueError, "candidates"),
    "constrained out of range": (lambda: sc.sample_constrained(rng(), 10, [None, [10]], 2.0), ValueError, "candidates"),
    "constrained ratio below 1": (lambda: sc.sample_constrained(rng(), 10, [None], 0.5), ValueError, "probe_ratio"),
    "constrained negative n_workers": (lambda: sc.sample_constrained(rng(), -1, [None], 2.0), ValueError, "n_workers"),
    "constrained zero n_workers": (lambda: sc.sample_constrained(rng(), 0, [None], 2.0), ValueError, "n_workers"),
    # ReservationQueue
    "unknown policy": (lambda: sc.ReservationQueue("lifo"), ValueError, "policy"),
    "weights not a dict": (lambda: sc.ReservationQueue("fair", weights=[1, 2]), TypeError, "weights"),
    "zero weight": (lambda: sc.ReservationQueue("fair", weights={"a": 0}), ValueError, "weight"),
    "negative weight": (lambda: sc.ReservationQueue("fair", weights={"a": -1.0}), ValueError, "weight"),
    "nan weight": (lambda: sc.ReservationQueue("fair", weights={"a": math.nan}), ValueError, "weight"),
    "inf weight": (lambda: sc.ReservationQueue("fair", weights={"a": math.inf}), ValueError, "weight"),
    "zero default_weight": (lambda: sc.ReservationQueue("fair", default_weight=0), ValueError, "default_weight"),
    "str default_weight": (lambda: sc.ReservationQueue("fair", default_weight="1"), TypeError, "default_weight"),
    "set_weight zero": (lambda: fair_queue().set_weight("a", 0), ValueError, "weight"),
    "set_weight str": (lambda: fair_queue().set_weight("a", "2"), TypeError, "weight"),
    "push str job_id": (lambda: fair_queue().push("7", "a"), TypeError, "job_id"),
    "push float user": (lambda: fair_queue().push(2, 1.5), TypeError, "user"),
    "push bool user": (lambda: fair_queue().push(2, True), TypeError, "user"),
    "push huge int user": (lambda: fair_queue().push(2, 2**70), ValueError, "user"),
    "push str priority": (lambda: fair_queue().push(2, "a", "high"), TypeError, "priority"),
    "push priority over 32 bits": (lambda: fair_queue().push(2, "a", 2**40), ValueError, "priority"),
    "push priority just past the range": (lambda: fair_queue().push(2, "a", 2**31), ValueError, "PRIORITY_RANGE"),
    "push priority just below the range": (lambda: fair_queue().push(2, "a", -(2**31) - 1), ValueError, "priority"),
    "Reservation priority past the range": (lambda: sc.Reservation(1, "a", 2**31), ValueError, "priority"),
    "push job for a second user": (lambda: fair_queue().push(1, "b"), ValueError, "job"),
    "refund without a pop": (lambda: fair_queue().refund("a"), ValueError, "refund"),
    "refund unknown user": (lambda: fair_queue().refund("zz"), ValueError, "user"),
    "cancel str job_id": (lambda: fair_queue().cancel("1"), TypeError, "job_id"),
    "push_many short users": (lambda: fair_queue().push_many([1, 2], [1]), ValueError, "users"),
    "push_many short priorities": (lambda: fair_queue().push_many([1, 2], [1, 2], [0]), ValueError, "priorities"),
    "push_many float users": (lambda: fair_queue().push_many([1], [1.0]), TypeError, "users"),
    "push_many str users": (lambda: fair_queue().push_many([1], ["a"]), TypeError, "users"),
    "push_many float job_ids": (lambda: fair_queue().push_many([1.0], [1]), TypeError, "job_ids"),
    "push_many priority over 32 bits": (lambda: fair_queue().push_many([1], [1], [2**40]), ValueError, "priorities"),
    "pop_many negative": (lambda: fair_queue().pop_many(-1), ValueError, "max_count"),
    "pop_many str": (lambda: fair_queue().pop_many("3"), TypeError, "max_count"),
    # TaskTable
    "add_job duplicate": (lambda: table().add_job(1, 2), ValueError, "job_id"),
    "add_job str job_id": (lambda: table().add_job("2", 2), TypeError, "job_id"),
    "add_job negative n_tasks": (lambda: table().add_job(2, -1), ValueError, "n_tasks"),
    "add_job float n_tasks": (lambda: table().add_job(2, 2.0), TypeError, "n_tasks"),
    "add_job candidates wrong length": (lambda: table().add_job(2, 2, [None]), ValueError, "candidates"),
    "add_job candidates duplicate": (lambda: table().add_job(2, 1, [[1, 1]]), ValueError, "candidates"),
    "add_job candidates negative": (lambda: table().add_job(2, 1, [[-1]]), ValueError, "candidates"),
    "add_job candidates floats": (lambda: table().add_job(2, 1, [[1.5]]), TypeError, "candidates"),
    "add_job candidates not a sequence": (lambda: table().add_job(2, 1, 5), TypeError, "candidates"),
    "reserve unknown job": (lambda: table().reserve(9, [1]), ValueError, "job_id"),
    "reserve negative worker": (lambda: table().reserve(1, [2, -1]), ValueError, "workers"),
    "reserve float workers": (lambda: table().reserve(1, [1.5]), TypeError, "workers"),
    "reserve lengths differ": (lambda: table().reserve(1, [3, 4], [0]), ValueError, "tasks"),
    "reserve task out of range": (lambda: table().reserve(1, [3], [2]), ValueError, "tasks"),
    "reserve task below -1": (lambda: table().reserve(1, [3], [-2]), ValueError, "tasks"),
    "reserve tagged unconstrained task": (lambda: table().reserve(1, [3], [1]), ValueError, "tasks"),
    "reserve worker not a candidate": (lambda: table().reserve(1, [5], [0]), ValueError, "workers"),
    "get_task unknown job": (lambda: table().get_task(9, 3), ValueError, "job_id"),
    "get_task str worker": (lambda: table().get_task(1, "3"), TypeError, "worker"),
    "get_task str job_id": (lambda: table().get_task("1", 3), TypeError, "job_id"),
    "get_task_many lengths differ": (lambda: table().get_task_many([1], [3, 5]), ValueError, "workers"),
    "get_task_many unknown job": (lambda: table().get_task_many([9], [3]), ValueError, "job_id"),
    "get_task_many float workers": (lambda: table().get_task_many([1], [3.0]), TypeError, "workers"),
    "all_launched unknown job": (lambda: table().all_launched(9), ValueError, "job_id"),
    "workers_to_cancel unknown job": (lambda: table().workers_to_cancel(9), ValueError, "job_id"),
    "remove_job unknown job": (lambda: table().remove_job(9), ValueError, "job_id"),
    "drop_worker unknown job": (lambda: table().drop_worker(9, 3), ValueError, "job_id"),
    "drop_worker str worker": (lambda: table().drop_worker(1, "3"), TypeError, "worker"),
    "unlaunched unknown job": (lambda: table().unlaunched(9), ValueError, "job_id"),
    "outstanding unknown job": (lambda: table().outstanding(9), ValueError, "job_id"),
    "n_tasks unknown job": (lambda: table().n_tasks(9), ValueError, "job_id"),
    "n_launched unknown job": (lambda: table().n_launched(9), ValueError, "job_id"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_argument_raises_naming_it(case):
    """The call raises the expected exception type with the argument named in the message."""
    call, exception, name = case
    with pytest.raises(exception, match=name):
        call()


def test_rejected_queue_calls_change_nothing():
    """A rejected push, refund or weight leaves the queue's contents and order as they were."""
    q = sc.ReservationQueue("fair", weights={"a": 2})
    for job, user in [(1, "a"), (2, "b"), (1, "a"), (3, "b")]:
        q.push(job, user)
    for bad in (lambda: q.push(1, "b"), lambda: q.refund("b"), lambda: q.set_weight("a", -1), lambda: q.push(4, 1.5)):
        with pytest.raises((ValueError, TypeError)):
            bad()
    assert len(q) == 4 and q.counts() == {"a": 2, "b": 2}
    assert [r.job_id for r in iter(q.pop, None)] == [1, 2, 1, 3]


def test_rejected_task_table_calls_change_nothing():
    """A rejected add_job or reserve (one bad probe among good ones) records nothing."""
    t = table()
    with pytest.raises(ValueError):
        t.add_job(1, 5)
    with pytest.raises(ValueError):
        t.reserve(1, [3, 4, 6], [0, 0, 0])  # worker 6 is no candidate of task 0
    assert t.n_tasks(1) == 2 and t.outstanding(1) == 2
    assert sorted([t.get_task(1, 3), t.get_task(1, 5)]) == [0, 1]


def test_rejected_sampling_call_leaves_the_rng_untouched():
    """A sampling call rejected for its arguments draws nothing from the generator."""
    r = sc.Rng(5)
    for bad in (
        lambda: sc.sample_batch(r, 10, 2, 1.0, candidates=[1, 1]),
        lambda: sc.sample_batch(r, 10, -1, 2.0),
        lambda: sc.sample_batch_many(r, 10, [3, -1], 2.0),
        lambda: sc.sample_per_task(r, 10, 2, 0),
        lambda: sc.sample_job(r, 10, 2, 2.0, [1, 2], [None, [1, 12]]),
        lambda: sc.sample_job(r, 10, 2, 2.0, [1, 2], [[5], [1]]),
    ):
        with pytest.raises(ValueError):
            bad()
    assert r.next_u64() == sc.Rng(5).next_u64()


# ---- regressions: defects this suite found ----


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
    wrapped INT64_MIN that casting an out-of-range double gave before the fix."""
    with pytest.raises(ValueError, match=r"probe_ratio|n_tasks"):
        call()


def test_per_task_probe_total_overflow_is_rejected():
    """n_tasks * d beyond int64 is a ValueError naming both; unchecked, the product wrapped
    to 0, passed the size check and the kernel tried to write 2**64 probes (so this runs in
    a subprocess under a 1 GiB memory limit)."""
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
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False).stdout
    assert out.startswith("ValueError") and "n_tasks" in out and "d =" in out, out


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
    ("user 0 ... not user 1" said nothing to a caller who pushed 'alice' and 'bob')."""
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
    "unhashable type: 'list'" from a dict lookup."""
    with pytest.raises(TypeError, match=name):
        call()


def test_get_task_many_with_an_unknown_job_consumes_nothing():
    """A rejected get_task_many launches nothing: before the fix, the requests before the
    bad one launched tasks whose answers the caller never saw."""
    t = sc.TaskTable()
    t.add_job(1, 2)
    t.reserve(1, [0, 1, 2])
    with pytest.raises(ValueError, match="job_id"):
        t.get_task_many([1, 99], [0, 0])
    assert t.n_launched(1) == 0 and t.outstanding(1) == 3


def test_rejected_push_many_queues_nothing():
    """A push_many rejected for one reservation (a job queued for another user, before or
    within the batch) leaves the queue as it was, all or nothing."""
    q = sc.ReservationQueue("fifo")
    q.push(5, 1)
    with pytest.raises(ValueError, match="job"):
        q.push_many([1, 2, 5], [0, 0, 2])
    with pytest.raises(ValueError, match=r"job_ids\[2\]"):
        q.push_many([7, 8, 7], [3, 3, 4])  # the batch contradicts itself
    assert len(q) == 1 and q.counts() == {1: 1}
    q.push_many([7, 8, 7], [3, 3, 3])
    assert q.counts() == {1: 1, 3: 3}
