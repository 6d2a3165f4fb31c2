"""IdleWorkers (idle_workers.py): a user's idle workers first, then fresh ones, never another user's."""

from sparrow_runtime.services.idle_workers import KEPT_EMPTY, IdleWorkers


class _W:
    def __init__(self, name, user=None):
        self.name = name
        self.user = user

    def __repr__(self):
        return self.name


def test_a_user_takes_its_own_idle_workers_in_the_order_they_idled_then_fresh_ones():
    idle = IdleWorkers()
    a1, b1, a2, fresh = _W("a1", "alice"), _W("b1", "bob"), _W("a2", "alice"), _W("f")
    for w in (a1, b1, a2, fresh):
        idle.put(w)
    assert len(idle) == 4 and idle.users() == {"alice": 2, "bob": 1, None: 1}
    assert idle.take("alice") is a1
    assert idle.take("alice") is a2
    assert idle.take("alice") is fresh  # no idle worker of hers left: a fresh one
    assert idle.take("alice") is None  # bob's is never hers
    assert idle.can_serve("bob") and not idle.can_serve("alice")
    assert idle.take("bob") is b1 and len(idle) == 0


def test_the_worker_idle_longest_of_any_user_is_the_one_to_retire():
    idle = IdleWorkers()
    b1, a1 = _W("b1", "bob"), _W("a1", "alice")
    idle.put(b1)
    idle.put(a1)
    assert idle.oldest() is b1
    assert idle.remove(b1) and not idle.remove(b1)  # removed once; a worker not idle is not
    assert b1 not in idle and a1 in idle
    assert idle.oldest() is a1
    assert idle.take("bob") is None  # the retired one is gone
    assert idle.take("alice") is a1 and idle.oldest() is None


def test_users_seen_once_do_not_pile_up():
    idle = IdleWorkers()
    for i in range(10 * KEPT_EMPTY):
        idle.put(_W(f"w{i}", f"user{i}"))
        idle.take(f"user{i}")
    assert len(idle._by_user) <= KEPT_EMPTY + 1
    idle.put(_W("last", "user0"))
    assert idle.take("user0").name == "last"
