"""The value store of a node monitor: keys, the byte limit, owners, and the ways values leave."""

from __future__ import annotations

import pytest

from sparrow_runtime.data.store import StoreFull, ValueStore


def test_a_value_is_kept_under_a_random_key_with_its_owner():
    """Each put gets a fresh 16-byte key; get returns the value, for its user or for anyone (user None)."""
    store = ValueStore(1000)
    a, b = store.put(b"a" * 10, "alice", "s1"), store.put(b"b" * 10, "bob", "s2")
    assert a != b and len(a) == 16
    assert store.get(a).value == b"a" * 10 and store.get(a, "alice").user == "alice"
    assert store.get(a, "bob") is None and store.get(b"x" * 16) is None
    assert store.held == 20 and len(store) == 2


def test_past_the_limit_a_new_value_is_refused_with_the_sizes_and_nothing_changes():
    """A value that would pass the limit raises StoreFull naming what is held, the limit and its size."""
    store = ValueStore(100)
    store.put(b"x" * 60)
    with pytest.raises(StoreFull, match="60 of 100 bytes held, so a result of 41 bytes was refused"):
        store.put(b"y" * 41)
    assert store.held == 60 and len(store) == 1
    store.put(b"z" * 40)  # exactly to the limit fits
    assert store.held == 100


def test_release_drops_only_the_users_own_values():
    """release with a user drops that user's values only; without one, any named value."""
    store = ValueStore(1000)
    a, b = store.put(b"a", "alice"), store.put(b"b", "bob")
    assert store.release([a, b], "alice") == 1
    assert store.get(a) is None and store.get(b) is not None
    assert store.release([b, b"unknown" * 2]) == 1 and store.held == 0 and store.released == 2


def test_a_sessions_values_go_together_and_others_stay():
    """release_session drops every value of that client session and no other."""
    store = ValueStore(1000)
    keys = [store.put(b"v" * 10, "u", "gone") for _ in range(3)]
    other = store.put(b"w" * 10, "u", "here")
    store.release([keys[0]])  # one released before: not counted twice
    assert store.release_session("gone") == 2
    assert [store.get(k) for k in keys] == [None] * 3 and store.get(other) is not None
    assert store.held == 10 and store.release_session("gone") == 0


def test_a_sessions_release_by_its_user_leaves_another_users_values_of_the_same_session():
    """release_session(session, user) drops that user's values of the session only: bob's client that
    claimed alice's client id releases none of hers; None (an admin's session) drops all."""
    store = ValueStore(1000)
    alices = [store.put(b"a" * 10, "alice", "id-1") for _ in range(2)]
    bobs = store.put(b"b" * 10, "bob", "id-1")
    assert store.release_session("id-1", "bob") == 1
    assert store.get(bobs) is None and all(store.get(k) is not None for k in alices)
    assert store.release_session("id-1", "bob") == 0 and store.held == 20
    assert store.release_session("id-1", "alice") == 2 and store.held == 0 and len(store) == 0
    store.put(b"c" * 10, "carol", "id-2")
    store.put(b"d" * 10, "dave", "id-2")
    assert store.release_session("id-2", None) == 2 and len(store) == 0


@pytest.mark.parametrize("limit", [-1, 1.5, True])
def test_a_bad_limit_is_refused(limit):
    """The limit must be an int of bytes >= 0."""
    with pytest.raises(ValueError, match="memory_limit must be an int"):
        ValueStore(limit)
