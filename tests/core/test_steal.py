"""Work stealing (csrc/sparrow/steal.h): the victims an idle worker asks, the answer it steals
from and how many, and the victim's side of the queue, on the binding and the reference model;
then the binding against the reference on random inputs, and a steal loop that moves
reservations between queues without losing or duplicating one."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparrow_core

from . import reference


def test_victims_are_distinct_peers_never_the_thief(impl):
    """Asking for more victims than there are peers gives every peer once, never the thief."""
    victims = impl.choose_victims(impl.Rng(3), 5, 2, 10)
    assert sorted(victims.tolist()) == [0, 1, 3, 4]


def test_victims_of_a_lone_worker_are_none(impl):
    """A cluster of one worker has no peer to steal from."""
    assert impl.choose_victims(impl.Rng(3), 1, 0, 4).tolist() == []


def test_steal_prefers_the_peer_behind_the_longest_running_task(impl):
    """The victim is the eligible answer whose slot has been held longest, not the longest queue."""
    choice = impl.choose_steal(impl.Rng(1), [5, 2, 9], [0.1, 3.0, 0.2], max_take=8)
    assert choice == (1, 1)


def test_steal_takes_half_the_queue_at_most_max_take(impl):
    """A queue of 7 gives 4 (half, rounded up), capped by max_take."""
    assert impl.choose_steal(impl.Rng(1), [7], [1.0], max_take=8) == (0, 4)
    assert impl.choose_steal(impl.Rng(1), [7], [1.0], max_take=2) == (0, 2)


def test_steal_skips_empty_and_barely_blocked_peers(impl):
    """Peers with nothing waiting, or blocked for less than min_blocked, are not victims."""
    assert impl.choose_steal(impl.Rng(1), [0, 3], [9.0, 0.05], min_blocked=0.1) is None
    assert impl.choose_steal(impl.Rng(1), [0, 3, 1], [9.0, 0.05, 0.2], min_blocked=0.1) == (2, 1)


def test_steal_breaks_ties_by_queue_length_then_at_random(impl):
    """Equal blocked times: the longer queue; equal both: each tied answer is picked sometimes."""
    assert impl.choose_steal(impl.Rng(1), [1, 4, 2], [1.0, 1.0, 1.0])[0] == 1
    rng = impl.Rng(5)
    picks = {impl.choose_steal(rng, [2, 2, 2], [1.0, 1.0, 1.0])[0] for _ in range(200)}
    assert picks == {0, 1, 2}


def test_queue_steal_takes_the_head_in_service_order(impl):
    """Priority queue: the steal takes what would be served next, and stops at a pinned job."""
    q = impl.ReservationQueue("priority")
    for job, prio in [(1, 2), (2, 0), (3, 1), (4, 0)]:
        q.push(job, "u", prio)
    assert [r.job_id for r in q.steal(2)] == [2, 4]
    assert q.steal(5, pinned=[3]) == []
    assert [r.job_id for r in q.steal(5)] == [3, 1]
    assert len(q) == 0


def test_queue_steal_refunds_the_fair_charge(impl):
    """A fair queue does not charge a user for reservations stolen from it: after user a's head
    is stolen, a is still served before b, as if it had never been popped."""
    q = impl.ReservationQueue("fair")
    for job, user in [(1, "a"), (2, "a"), (3, "b")]:
        q.push(job, user)
    assert [r.job_id for r in q.steal(1)] == [1]
    assert [r.job_id for r in (q.pop(), q.pop())] == [2, 3]


# ---- the binding against the reference model ----


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n_workers=st.integers(1, 3000),
    thief_at=st.floats(0, 1, exclude_max=True),
    k=st.integers(0, 40),
)
def test_choose_victims_matches_the_reference(seed, n_workers, thief_at, k):
    """Same seed, same victims in the same order, for any cluster size."""
    thief = int(thief_at * n_workers)
    got = sparrow_core.choose_victims(sparrow_core.Rng(seed), n_workers, thief, k)
    want = reference.choose_victims(reference.Rng(seed), n_workers, thief, k)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("k", range(1, 9))
def test_few_victims_in_a_row_match_the_reference(k):
    """Up to 8 victims are drawn by a path unrolled per count (sampling.h's floyd_few): for each
    count, many attempts on one generator (so a kept 32-bit half carries from one attempt to the
    next) give the reference's victims in order."""
    ours, ref = sparrow_core.Rng(k), reference.Rng(k)
    n_workers = 12  # few peers: a draw often repeats an earlier one (Floyd then takes j)
    for attempt in range(200):
        thief = attempt % n_workers
        got = sparrow_core.choose_victims(ours, n_workers, thief, k)
        want = reference.choose_victims(ref, n_workers, thief, k)
        assert got.tolist() == want.tolist()
        assert thief not in got.tolist() and len(set(got.tolist())) == k


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    answers=st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, 0.5, 1.0, 2.0])), max_size=12),
    max_take=st.integers(1, 4),
    min_blocked=st.sampled_from([0.0, 0.5, 1.5]),
)
def test_choose_steal_matches_the_reference(seed, answers, max_take, min_blocked):
    """Same seed and answers (ties frequent), same choice, over several calls on one generator."""
    counts = [a for a, _ in answers]
    ages = [b for _, b in answers]
    rng, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    for _ in range(3):
        got = sparrow_core.choose_steal(rng, counts, ages, max_take, min_blocked)
        assert got == reference.choose_steal(ref, counts, ages, max_take, min_blocked)


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    policy=st.sampled_from(list(sparrow_core.QUEUE_POLICIES)),
    n_workers=st.integers(2, 6),
    rounds=st.integers(1, 60),
)
def test_a_steal_loop_moves_reservations_without_loss_or_duplicates(seed, policy, n_workers, rounds):
    """Random pushes, pops, cancels and steals between queues (victims and counts decided by the
    kernel) on the binding and on the reference: the same reservations everywhere at every step,
    and every reservation pushed is popped, cancelled or still queued exactly once."""
    rng, ref = sparrow_core.Rng(seed), reference.Rng(seed)
    draw = np.random.default_rng(seed)
    queues = [sparrow_core.ReservationQueue(policy) for _ in range(n_workers)]
    models = [reference.ReservationQueue(policy) for _ in range(n_workers)]
    pushed, popped, cancelled, next_job = [], [], 0, 0
    for _ in range(rounds):
        op = draw.integers(4)
        w = int(draw.integers(n_workers))
        if op == 0:
            for _ in range(int(draw.integers(1, 6))):
                job, user, prio = next_job, f"u{draw.integers(3)}", int(draw.integers(3))
                next_job += 1
                for q in (queues[w], models[w]):
                    q.push(job, user, prio)
                pushed.append(job)
        elif op == 1:
            got, want = queues[w].pop(), models[w].pop()
            assert (got and (got.job_id, got.user)) == (want and (want.job_id, want.user))
            if got is not None:
                popped.append(got.job_id)
        elif op == 2 and pushed:
            job = pushed[int(draw.integers(len(pushed)))]
            removed = queues[w].cancel(job)
            assert removed == models[w].cancel(job)
            cancelled += removed
        else:
            victims = sparrow_core.choose_victims(rng, n_workers, w, 3)
            assert victims.tolist() == reference.choose_victims(ref, n_workers, w, 3).tolist()
            counts = [len(queues[v]) for v in victims]
            ages = [float(draw.integers(3)) for _ in victims]
            choice = sparrow_core.choose_steal(rng, counts, ages, 2)
            assert choice == reference.choose_steal(ref, counts, ages, 2)
            if choice is not None:
                v = int(victims[choice[0]])
                got, want = queues[v].steal(choice[1]), models[v].steal(choice[1])
                assert [(r.job_id, r.user, r.priority) for r in got] == [(r.job_id, r.user, r.priority) for r in want]
                for r in got:
                    queues[w].push(r.job_id, r.user, r.priority)
                    models[w].push(r.job_id, r.user, r.priority)
    for q in queues:
        while (r := q.pop()) is not None:
            popped.append(r.job_id)
    assert len(popped) + cancelled == len(pushed)
    assert len(set(popped)) == len(popped)


def test_choose_steal_over_a_large_batch_of_answers_from_numpy():
    """100,000 answers as numpy arrays in one call: the last (longest blocked, 4 queued) gives 2."""
    counts = np.arange(100_000, dtype=np.int64) % 7
    ages = np.linspace(0.0, 1.0, 100_000)
    assert sparrow_core.choose_steal(sparrow_core.Rng(1), counts, ages, 3) == (99_999, 2)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: sparrow_core.choose_victims(sparrow_core.Rng(1), 0, 0, 1), ValueError, "n_workers"),
        (lambda: sparrow_core.choose_victims(sparrow_core.Rng(1), 4, 4, 1), ValueError, "thief"),
        (lambda: sparrow_core.choose_victims(sparrow_core.Rng(1), 4, -1, 1), ValueError, "thief"),
        (lambda: sparrow_core.choose_victims(sparrow_core.Rng(1), 4, 0, -1), ValueError, "k must be"),
        (lambda: sparrow_core.choose_victims(sparrow_core.Rng(1), 4, 0, "2"), TypeError, "k"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [1, 2], [0.5]), ValueError, "same length"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [-1], [0.5]), ValueError, "stealable"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [1], [float("nan")]), ValueError, "blocked_for"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [1], [0.5], 0), ValueError, "max_take"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [1], [0.5], 1, -1.0), ValueError, "min_blocked"),
        (lambda: sparrow_core.choose_steal(sparrow_core.Rng(1), [1.5], [0.5]), TypeError, "stealable"),
        (lambda: sparrow_core.ReservationQueue().steal(-1), ValueError, "max_count"),
        (lambda: sparrow_core.ReservationQueue().steal(1, pinned=["x"]), TypeError, "pinned"),
    ],
)
def test_bad_steal_arguments_raise_clear_errors(call, error, message):
    """Each broken contract of the steal kernel raises the right exception naming the argument."""
    with pytest.raises(error, match=message):
        call()
