"""Reservation queues (csrc/sparrow/reservation_queue.h): scripted orders of the three
policies on the binding and the reference, then the binding against the reference model on
random operation sequences (lazy cancels, compaction and refunds included).
"Design scenario" tests follow the scenarios listed in docs/design.md."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparrow_core

from . import reference

POLICIES = list(sparrow_core.QUEUE_POLICIES)


def push_all(queue, pushes):
    for job_id, user, *priority in pushes:
        queue.push(job_id, user, *priority)


def drain(queue):
    out = []
    while (r := queue.pop()) is not None:
        out.append(r)
    return out


# ---- scripted scenarios, on the binding and the reference model ----


def test_fair_equal_weights_round_robin_by_user(impl):
    """Backlogs {u1: 2, u2: 3, u3: 4} at equal weights: u1 u2 u3 u1 u2 u3 u2 u3 u3."""
    q = impl.ReservationQueue("fair")
    push_all(q, [(j, "u1") for j in range(2)] + [(10 + j, "u2") for j in range(3)] + [(20 + j, "u3") for j in range(4)])
    assert [r.user for r in drain(q)] == ["u1", "u2", "u3", "u1", "u2", "u3", "u2", "u3", "u3"]


def test_fair_releases_jobs_in_design_round_robin_order(impl):
    """Design scenario: backlogs user1 {5, 5}, user2 {6, 7, 8}, user3 {9, 9, 9, 9} release
    5, 6, 9, 5, 7, 9, 8, 9, 9."""
    q = impl.ReservationQueue("fair")
    push_all(q, [(5, "user1")] * 2 + [(6, "user2"), (7, "user2"), (8, "user2")] + [(9, "user3")] * 4)
    assert [r.job_id for r in drain(q)] == [5, 6, 9, 5, 7, 9, 8, 9, 9]


def test_fair_refund_keeps_the_turn_until_the_user_is_empty(impl):
    """An empty get_task for user2 (refund) serves user2 again without moving the turn;
    once user2 is empty, a refund no longer holds the others back."""
    q = impl.ReservationQueue("fair")
    push_all(q, [(5, "user1")] * 2 + [(6, "user2"), (7, "user2"), (8, "user2")] + [(9, "user3")] * 4)
    assert [q.pop().job_id, q.pop().job_id] == [5, 6]
    q.refund("user2")
    assert [q.pop().job_id for _ in range(4)] == [7, 9, 5, 8]
    q.refund("user2")  # user2's last reservation came back empty: nothing of user2 is left
    assert [r.job_id for r in drain(q)] == [9, 9, 9]


def test_priority_serves_lower_numbers_first_fifo_within_a_level(impl):
    """Design scenario: 5 at priority 2 (4 running), then 2 at priority 1 and 1 at priority 0:
    the next releases are priority 0, then 1, 1 (in arrival order), then 2."""
    q = impl.ReservationQueue("priority")
    push_all(q, [(job, "u", 2) for job in range(1, 6)])
    assert [q.pop().job_id for _ in range(4)] == [1, 2, 3, 4]
    push_all(q, [(6, "u", 1), (7, "u", 1), (8, "u", 0)])
    assert [(r.job_id, r.priority) for r in drain(q)] == [(8, 0), (6, 1), (7, 1), (5, 2)]


def test_fifo_serves_in_arrival_order_ignoring_user_and_priority(impl):
    """fifo: arrival order, whatever the users and priorities."""
    q = impl.ReservationQueue("fifo")
    pushes = [(3, "a", 5), (1, "b", 0), (2, "a", 9), (4, 7, -1)]
    push_all(q, pushes)
    assert [(r.job_id, r.user, r.priority) for r in drain(q)] == pushes


def test_fair_weights_three_to_one(impl):
    """Weights 3:1, both backlogged: exactly 75% / 25% of 4,000 pops, 3:1 in every 4."""
    q = impl.ReservationQueue("fair", weights={"a": 3, "b": 1})
    push_all(q, [(j, "a") for j in range(5000)] + [(10_000 + j, "b") for j in range(5000)])
    users = [q.pop().user for _ in range(4000)]
    assert users.count("a") == 3000 and users.count("b") == 1000
    assert all(users[i : i + 4].count("a") == 3 for i in range(0, 4000, 4))


def test_fair_unknown_user_gets_the_default_weight(impl):
    """A user without a weight gets default_weight: a (weight 1) vs b (default 2) is 1:2."""
    q = impl.ReservationQueue("fair", weights={"a": 1}, default_weight=2.0)
    push_all(q, [(j, "a") for j in range(600)] + [(1000 + j, "b") for j in range(600)])
    users = [q.pop().user for _ in range(600)]
    assert users.count("a") == 200 and users.count("b") == 400


def test_fair_set_weight_applies_to_later_pops(impl):
    """Changing a weight mid-run changes the share from then on."""
    q = impl.ReservationQueue("fair")
    push_all(q, [(j, "a") for j in range(400)] + [(1000 + j, "b") for j in range(400)])
    assert [q.pop().user for _ in range(100)].count("a") == 50
    q.set_weight("a", 4)
    assert [q.pop().user for _ in range(100)].count("a") == 80


def test_fair_idle_user_earns_no_credit(impl):
    """A user that was idle starts at the current virtual time, not with a backlog of turns."""
    q = impl.ReservationQueue("fair")
    push_all(q, [(j, "busy") for j in range(100)])
    assert [q.pop().user for _ in range(50)] == ["busy"] * 50
    push_all(q, [(1000 + j, "late") for j in range(50)])
    users = [q.pop().user for _ in range(20)]
    assert users.count("late") == 10  # alternating, not 20 in a row


@pytest.mark.parametrize("policy", POLICIES)
def test_cancel_returns_the_count_and_removes_the_job(impl, policy):
    """cancel(job) removes every queued reservation of the job, in every policy."""
    q = impl.ReservationQueue(policy)
    push_all(q, [(1, "a"), (2, "b"), (1, "a"), (3, "a"), (1, "a"), (2, "b")])
    assert q.cancel(1) == 3
    assert len(q) == 3 and q.count("a") == 1 and q.counts() == {"a": 1, "b": 2}
    assert q.cancel(1) == 0 and q.cancel(99) == 0
    assert sorted(r.job_id for r in drain(q)) == [2, 2, 3]
    q.push(1, "b")  # a cancelled job may come back, even for another user
    assert q.pop().job_id == 1 and len(q) == 0 and not q


@pytest.mark.parametrize("policy", POLICIES)
def test_counts_per_user(impl, policy):
    """count(user) and counts() follow pushes, pops and cancels; empty users are left out."""
    q = impl.ReservationQueue(policy)
    push_all(q, [(1, "a"), (2, "b"), (3, "b"), (4, 9)])
    assert q.counts() == {"a": 1, "b": 2, 9: 1} and q.count("b") == 2 and q.count("nobody") == 0
    q.cancel(2)
    assert q.counts() == {"a": 1, "b": 1, 9: 1}
    drain(q)
    assert q.counts() == {} and len(q) == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_str_and_int_users_round_trip_as_pushed(impl, policy):
    """Users come back as the very values pushed: "7" and 7 are different users."""
    q = impl.ReservationQueue(policy)
    push_all(q, [(1, "7"), (2, 7), (3, "alice")])
    assert [(r.job_id, type(r.user), r.user) for r in drain(q)] == [(1, str, "7"), (2, int, 7), (3, str, "alice")]


@pytest.mark.parametrize("policy", POLICIES)
def test_peek_shows_the_next_pop(impl, policy):
    """peek() returns what pop() will, without removing it; None when empty."""
    q = impl.ReservationQueue(policy)
    assert q.peek() is None and q.pop() is None
    push_all(q, [(1, "a", 3), (2, "b", 1), (3, "a", 2)])
    while len(q):
        seen = q.peek()
        assert len(q) and q.pop() == seen
    assert q.peek() is None


def test_reservation_fields():
    """Reservation carries job_id, user and priority and compares by value."""
    r = sparrow_core.Reservation(4, "u", 2)
    assert (r.job_id, r.user, r.priority) == (4, "u", 2)
    assert r == sparrow_core.Reservation(4, "u", 2) and r != sparrow_core.Reservation(4, "u", 3)
    assert hash(r) == hash(sparrow_core.Reservation(4, "u", 2))


@pytest.mark.parametrize("policy", POLICIES)
def test_push_many_pop_many_agree_with_push_pop(policy):
    """The batch calls make the same decisions as one call per reservation."""
    rng = np.random.default_rng(0)
    jobs = rng.integers(0, 1000, 3000)
    users = jobs % 37  # one user per job
    priorities = rng.integers(0, 4, 3000)
    single, batch = sparrow_core.ReservationQueue(policy), sparrow_core.ReservationQueue(policy)
    for j, u, p in zip(jobs.tolist(), users.tolist(), priorities.tolist()):
        single.push(j, u, p)
    batch.push_many(jobs, users, priorities)
    assert len(batch) == 3000 and batch.counts() == single.counts()
    popped = [single.pop() for _ in range(1200)]
    got_jobs, got_users, got_prios = batch.pop_many(1200)
    assert got_users.dtype == np.int64
    assert got_jobs.tolist() == [r.job_id for r in popped]
    assert got_users.tolist() == [r.user for r in popped]
    assert got_prios.tolist() == [r.priority for r in popped]
    rest = batch.pop_many(10_000)
    assert rest[0].tolist() == [r.job_id for r in drain(single)] and len(batch) == 0


def test_pop_many_returns_str_users_as_objects():
    """With a str user among them, pop_many's users are an object array of the values."""
    q = sparrow_core.ReservationQueue("fifo")
    q.push(1, "alice")
    q.push_many([2, 3], [5, 6])
    jobs, users, _ = q.pop_many(5)
    assert jobs.tolist() == [1, 2, 3] and users.dtype == object and users.tolist() == ["alice", 5, 6]
    empty = q.pop_many(5)
    assert [a.size for a in empty] == [0, 0, 0]


def test_numpy_integer_users_are_the_same_users_as_ints():
    """pop_many hands users back as numpy int64: pushing one back must work and be the same
    user as the Python int (the contract allows any hashable user)."""
    q = sparrow_core.ReservationQueue("fair")
    q.push(1, np.int64(3))
    q.push(2, 3)
    assert q.counts() == {3: 2} and q.pop().user == 3


# ---- the binding against the reference model ----

USERS = ["a", "b", "c", 0, 1]
OPERATION = st.one_of(
    st.tuples(st.just("push"), st.integers(0, 9), st.sampled_from(USERS), st.integers(0, 3)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("peek")),
    st.tuples(st.just("cancel"), st.integers(0, 9)),
    st.tuples(st.just("refund"), st.sampled_from(USERS)),
    st.tuples(st.just("set_weight"), st.sampled_from(USERS), st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0, 7.0])),
)


def call(queue, op):
    """(outcome, value): the operation's result, or the exception type it raised."""
    try:
        result = getattr(queue, op[0])(*op[1:])
    except ValueError:
        return "ValueError", None
    if result is not None and op[0] in ("pop", "peek"):
        result = (result.job_id, result.user, result.priority)
    return "ok", result


@settings(max_examples=300)
@given(policy=st.sampled_from(POLICIES), ops=st.lists(OPERATION, max_size=80))
def test_random_operations_match_reference(policy, ops):
    """Every pop, peek, cancel count, error and per-user count equals the reference's."""
    ours, ref = sparrow_core.ReservationQueue(policy), reference.ReservationQueue(policy)
    for op in ops:
        assert call(ours, op) == call(ref, op), op
        assert len(ours) == len(ref) and ours.counts() == ref.counts()


@pytest.mark.parametrize("policy", POLICIES)
def test_mass_cancels_with_compaction_match_reference(policy):
    """Thousands of reservations, most cancelled (the kernel compacts its storage), then
    interleaved pushes and pops: the same decisions as the reference."""
    rng = np.random.default_rng(1)
    ours, ref = sparrow_core.ReservationQueue(policy), reference.ReservationQueue(policy)
    for step in range(6000):
        job = int(rng.integers(0, 400))
        user, priority = f"u{job % 13}", int(rng.integers(0, 5))
        ours.push(job, user, priority)
        ref.push(job, user, priority)
        if step % 7 == 0:
            victim = int(rng.integers(0, 400))
            assert ours.cancel(victim) == ref.cancel(victim)
        if step % 11 == 0:
            assert call(ours, ("pop",)) == call(ref, ("pop",))
    for job in range(0, 400, 2):
        assert ours.cancel(job) == ref.cancel(job)
    assert len(ours) == len(ref)
    assert [call(ours, ("pop",)) for _ in range(len(ref) + 1)] == [call(ref, ("pop",)) for _ in range(len(ref) + 1)]


def test_many_refunds_match_reference():
    """Long pop/refund cycles (the kernel rebuilds its user heap) keep the reference's order."""
    ours, ref = sparrow_core.ReservationQueue("fair"), reference.ReservationQueue("fair")
    for queue in (ours, ref):
        for job in range(3000):
            queue.push(job, job % 5)
        queue.set_weight(3, 2.5)
    for step in range(2500):
        assert call(ours, ("pop",)) == call(ref, ("pop",))
        if step % 3:
            user = step % 5
            assert call(ours, ("refund", user)) == call(ref, ("refund", user))
    assert ours.counts() == ref.counts()


@pytest.mark.parametrize("policy", POLICIES)
def test_short_and_long_forms_alternate_like_the_reference(policy):
    """The kernel keeps up to 7 reservations inline and switches to its long form beyond:
    queues that repeatedly grow past 7 (or stay short) and drain (with cancels on the way)
    decide as the reference does."""
    rng = np.random.default_rng(7)
    ours, ref = sparrow_core.ReservationQueue(policy), reference.ReservationQueue(policy)
    for cycle in range(200):
        depth = int(rng.integers(1, 17))
        for k in range(depth):
            job, user, priority = cycle * 10 + k % 4, f"u{(cycle + k % 4) % 3}", int(rng.integers(0, 3))
            assert call(ours, ("push", job, user, priority)) == call(ref, ("push", job, user, priority))
        if cycle % 3 == 0:
            assert call(ours, ("cancel", cycle * 10 + 1)) == call(ref, ("cancel", cycle * 10 + 1))
        drained = [call(ours, ("pop",)) for _ in range(depth + 1)]
        assert drained == [call(ref, ("pop",)) for _ in range(depth + 1)]
        assert len(ours) == len(ref) == 0


def test_push_many_names_an_out_of_range_priority():
    """A priority beyond 32 bits is refused before anything is queued, naming its index."""
    q = sparrow_core.ReservationQueue("priority")
    with pytest.raises(ValueError, match=r"priorities\[1\]"):
        q.push_many([1, 2], [0, 0], [0, 2**40])
    assert len(q) == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_push_with_a_count_is_count_single_pushes(policy):
    """push(job, user, priority, count=k) queues what k single pushes queue, in the same order;
    count 0 queues nothing; a user conflict queues nothing; a negative count is refused."""
    batched, single = sparrow_core.ReservationQueue(policy), sparrow_core.ReservationQueue(policy)
    for job, user, priority, count in [(1, "a", 2, 3), (2, "b", 0, 1), (3, "a", 1, 4), (4, "c", 0, 0)]:
        batched.push(job, user, priority, count=count)
        for _ in range(count):
            single.push(job, user, priority)
    assert [batched.pop() for _ in range(9)] == [single.pop() for _ in range(9)]
    batched.push(5, "a", count=2)
    with pytest.raises(ValueError, match="already has reservations queued for user 'a'"):
        batched.push(5, "b", count=3)
    assert len(batched) == 2
    with pytest.raises(ValueError, match="count must be >= 0"):
        batched.push(6, "a", count=-1)


@pytest.mark.parametrize("policy", POLICIES)
def test_priority_range_ends_are_accepted_and_served_in_order(policy):
    """Both ends of sparrow_core.PRIORITY_RANGE (INT32_MIN included, which the runtime once refused) are
    valid priorities, alone and in push_many; under the priority policy the lowest goes first."""
    low, high = sparrow_core.PRIORITY_RANGE[0], sparrow_core.PRIORITY_RANGE[-1]
    assert (low, high) == (-(2**31), 2**31 - 1)
    q = sparrow_core.ReservationQueue(policy)
    q.push(1, 7, high)
    q.push_many([2], [7], [low])
    popped = [q.pop() for _ in range(2)]
    assert [(r.job_id, r.priority) for r in popped] == (
        [(2, low), (1, high)] if policy == "priority" else [(1, high), (2, low)]
    )


def test_queue_policies_are_the_ones_the_queue_accepts():
    """sparrow_core.QUEUE_POLICIES names exactly the policies ReservationQueue takes."""
    assert sparrow_core.QUEUE_POLICIES == ("fifo", "priority", "fair")
    for policy in sparrow_core.QUEUE_POLICIES:
        assert sparrow_core.ReservationQueue(policy).policy == policy
    with pytest.raises(ValueError, match="fifo, priority, fair"):
        sparrow_core.ReservationQueue("lifo")
