"""Resources per task (csrc/sparrow/resources.h, fit_launcher.h): the hosts that can ever hold a
request, and which waiting reservation a host launches with what is free (bounded skip-ahead with
aging), on the binding and the reference model; then the binding against the reference on random
inputs, and a host driven by the rule that never exceeds its capacity, never idles within its window
while the head may be passed, and never starves a large request."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparrow_core

from . import reference
from .reference.fit_launcher import fits


def test_feasible_workers_are_the_hosts_that_hold_every_kind(impl):
    """A request for 8 CPUs and a GPU can only ever run on the hosts with both."""
    assert impl.feasible_workers([[4, 0], [16, 2], [8, 1], [32, 0]], [8, 1]).tolist() == [1, 2]


def test_no_host_holds_a_request_larger_than_every_capacity(impl):
    """An impossible request is a normal, empty answer (the caller turns it into an error)."""
    assert impl.feasible_workers([[4, 0], [16, 2]], [17, 0]).tolist() == []
    assert impl.feasible_workers([], [1, 0]).tolist() == []


def test_the_head_launches_when_it_fits(impl):
    """Whatever follows, a head that fits in what is free goes first."""
    assert impl.choose_launch([4, 1], [[4, 1], [1, 0]]) == 0


def test_a_small_request_behind_a_large_head_runs_instead_of_idling(impl):
    """Two CPUs free, the head wants four: the first later one that fits (the second) launches."""
    assert impl.choose_launch([2, 0], [[4, 0], [3, 0], [2, 0], [1, 0]]) == 2


def test_a_head_passed_over_max_skips_times_is_owed_the_host(impl):
    """After max_skips launches have passed it, the head blocks the rest until it fits."""
    waiting = [[4, 0], [1, 0]]
    assert impl.choose_launch([2, 0], waiting, head_skips=2, max_skips=3) == 1
    assert impl.choose_launch([2, 0], waiting, head_skips=3, max_skips=3) is None
    assert impl.choose_launch([4, 0], waiting, head_skips=3, max_skips=3) == 0


def test_the_window_bounds_how_far_the_host_looks(impl):
    """Only the head and the next window - 1 are candidates; window 1 is strict order."""
    waiting = [[4], [4], [4], [1]]
    assert impl.choose_launch([1], waiting, window=3) is None
    assert impl.choose_launch([1], waiting, window=4) == 3
    assert impl.choose_launch([1], [[4], [1]], window=1) is None


def test_nothing_waiting_launches_nothing(impl):
    assert impl.choose_launch([4, 4], np.empty((0, 2), dtype=np.int64)) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(window=0), "window must be >= 1"),
        (dict(max_skips=-1), "max_skips must be >= 0"),
        (dict(head_skips=-1), "head_skips must be >= 0"),
    ],
)
def test_a_broken_rule_is_a_clear_error(impl, kwargs, message):
    with pytest.raises(ValueError, match=message):
        impl.choose_launch([1], [[1]], **kwargs)


def test_negative_amounts_are_rejected(impl):
    """A negative request would fit anywhere: it is a broken contract, named."""
    with pytest.raises(ValueError, match=r"requests\[1\] must be >= 0"):
        impl.choose_launch([4, 4], [[1, -1]])
    with pytest.raises(ValueError, match=r"free\[0\] must be >= 0"):
        impl.choose_launch([-1, 4], [[1, 1]])
    with pytest.raises(ValueError, match=r"request\[0\] must be >= 0"):
        impl.feasible_workers([[1]], [-2])


def test_too_many_resource_kinds_are_rejected(impl):
    kinds = impl.MAX_RESOURCES + 1
    with pytest.raises(ValueError, match="resource kinds must be in"):
        impl.feasible_workers([[1] * kinds], [1] * kinds)


def test_binding_shapes_are_checked():
    """Rows of the wrong width name the argument."""
    with pytest.raises(ValueError, match="requests must be two-dimensional with 2 columns"):
        sparrow_core.choose_launch([1, 1], [[1, 1, 1]])
    with pytest.raises(TypeError, match="capacities must hold integers"):
        sparrow_core.feasible_workers([[1.5]], [1])


# ---- the binding against the reference model ----

amounts = st.integers(0, 6)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    r=st.integers(1, 3),
    n=st.integers(0, 12),
    head_skips=st.integers(0, 5),
    window=st.integers(1, 6),
    max_skips=st.integers(0, 5),
)
def test_choose_launch_matches_the_reference(data, r, n, head_skips, window, max_skips):
    free = data.draw(st.lists(amounts, min_size=r, max_size=r))
    requests = data.draw(st.lists(st.lists(amounts, min_size=r, max_size=r), min_size=n, max_size=n))
    rows = np.array(requests, dtype=np.int64).reshape(n, r)
    args = dict(head_skips=head_skips, window=window, max_skips=max_skips)
    assert sparrow_core.choose_launch(free, rows, **args) == reference.choose_launch(free, requests, **args)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), r=st.integers(1, 3), n=st.integers(0, 20))
def test_feasible_workers_matches_the_reference(data, r, n):
    hosts = data.draw(st.lists(st.lists(amounts, min_size=r, max_size=r), min_size=n, max_size=n))
    request = data.draw(st.lists(amounts, min_size=r, max_size=r))
    capacities = np.array(hosts, dtype=np.int64).reshape(n, r)
    got = sparrow_core.feasible_workers(capacities, request).tolist()
    assert got == reference.feasible_workers(hosts, request).tolist()


# ---- a host driven by the rule ----


def drive_host(impl, capacity, arrivals, window, max_skips, seed):
    """Runs one host: reservations arrive in order (a request each, every one within capacity), a
    running task ends at random; the host launches by choose_launch after every event, counting the
    head's skips. Checks at every step that the running tasks fit in the capacity and that the host
    never idles while a passable head has a fitting reservation in its window behind it. Returns, per
    reservation, how many launches passed it while it was the head."""
    rng = random.Random(seed)
    free = list(capacity)
    waiting = []  # (id, request), service order
    running = []
    passed = {}
    head_skips, head = 0, None
    pending = list(enumerate(arrivals))
    while pending or waiting or running:
        if pending and (not running or rng.random() < 0.6):
            waiting.append(pending.pop(0))
        elif running:
            ident, request = running.pop(rng.randrange(len(running)))
            free = [f + q for f, q in zip(free, request)]
        while waiting:
            if waiting[0][0] != head:
                head, head_skips = waiting[0][0], 0
            requests = np.array([q for _, q in waiting], dtype=np.int64)
            index = impl.choose_launch(free, requests, head_skips=head_skips, window=window, max_skips=max_skips)
            if index is None:
                if head_skips < max_skips:  # passable: nothing in the window may fit
                    assert not any(fits(free, q) for _, q in waiting[:window])
                else:
                    assert not fits(free, waiting[0][1])
                break
            ident, request = waiting.pop(index)
            if index > 0:
                head_skips += 1
                passed[head] = passed.get(head, 0) + 1
            free = [f - q for f, q in zip(free, request)]
            assert min(free) >= 0, "the running tasks exceed the host's capacity"
            running.append((ident, request))
    assert free == list(capacity)
    return passed


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    window=st.integers(1, 6),
    max_skips=st.integers(0, 6),
    seed=st.integers(0, 2**32),
)
def test_a_host_never_exceeds_capacity_idles_or_starves(data, window, max_skips, seed):
    """Every reservation launches, none is passed more than max_skips times at the head."""
    capacity = [4, 2]
    request = st.tuples(st.integers(1, 4), st.integers(0, 2)).map(list)
    arrivals = data.draw(st.lists(request, max_size=40))
    passed = drive_host(sparrow_core, capacity, arrivals, window, max_skips, seed)
    assert max(passed.values(), default=0) <= max_skips


def test_unbounded_skipping_would_starve_the_large_request():
    """The aging bound is what lets a large request through a stream of small ones: with max_skips
    as large as the stream, the 4-CPU head is passed by every 1-CPU task; with 3, at most 3 times."""
    arrivals = [[4]] + [[1]] * 60
    greedy = drive_host(sparrow_core, [4], [[1], [1], *arrivals], window=4, max_skips=10**6, seed=3)
    bounded = drive_host(sparrow_core, [4], [[1], [1], *arrivals], window=4, max_skips=3, seed=3)
    assert greedy[2] > 10
    assert bounded[2] <= 3
