"""Reference model of csrc/sparrow/reservation_queue.h with the binding's face: fifo, priority
(lower first, FIFO within a level) and fair (stride scheduling: serve the backlogged user with
the smallest (pass, order of becoming backlogged), charge 1/weight; a user becoming backlogged
starts at max(its pass, the pass of the last user served); refund gives one charge back).
Cancels remove entries eagerly; the kernel's lazy deletion must not change a decision."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from sparrow_core import QUEUE_POLICIES


class Reservation(NamedTuple):
    job_id: int
    user: Hashable
    priority: int


@dataclass
class _Entry:
    job_id: int
    user: Hashable
    priority: int
    seq: int


@dataclass
class _User:
    weight: float
    queue: list[_Entry] = field(default_factory=list)  # fair only
    passed: float = 0.0  # the stride scheduler's "pass"
    since: int = 0
    count: int = 0
    unrefunded_pops: int = 0


def _check_weight(weight: float, name: str) -> float:
    if not (weight > 0.0 and weight <= 1e300):
        raise ValueError(f"{name} must be a positive finite number, got {weight}")
    return float(weight)


class ReservationQueue:
    def __init__(self, policy: str = "fifo", weights: dict | None = None, default_weight: float = 1.0) -> None:
        if policy not in QUEUE_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(QUEUE_POLICIES)}, got {policy!r}")
        self.policy = policy
        self._default_weight = _check_weight(default_weight, "default_weight")
        self._users: dict[Hashable, _User] = {}
        self._jobs: dict[int, list] = {}  # job_id -> [user, live count]
        self._entries: list[_Entry] = []  # fifo / priority
        self._seq = 0
        self._backlog_seq = 0
        self._vtime = 0.0
        for user, weight in (weights or {}).items():
            self.set_weight(user, weight)

    def _user(self, user: Hashable) -> _User:
        if user not in self._users:
            self._users[user] = _User(self._default_weight)
        return self._users[user]

    def set_weight(self, user: Hashable, weight: float) -> None:
        self._user(user).weight = _check_weight(weight, "weight")

    def push(self, job_id: int, user: Hashable, priority: int = 0) -> None:
        u = self._user(user)
        job = self._jobs.setdefault(job_id, [user, 0])
        if job[0] != user:
            raise ValueError(f"job {job_id} already has reservations queued for user {job[0]!r}, not {user!r}")
        job[1] += 1
        entry = _Entry(job_id, user, priority, self._seq)
        self._seq += 1
        if self.policy != "fair":
            self._entries.append(entry)
        else:
            if u.count == 0:  # becomes backlogged
                u.passed = max(u.passed, self._vtime)
                u.since = self._backlog_seq
                self._backlog_seq += 1
            u.queue.append(entry)
        u.count += 1

    def _next(self) -> tuple[list[_Entry], int] | None:
        """(the list holding the next entry, its index), or None when empty."""
        if self.policy == "fifo":
            return (self._entries, 0) if self._entries else None
        if self.policy == "priority":
            if not self._entries:
                return None
            best = min(range(len(self._entries)), key=lambda i: (self._entries[i].priority, self._entries[i].seq))
            return self._entries, best
        backlogged = [u for u in self._users.values() if u.count]
        if not backlogged:
            return None
        return min(backlogged, key=lambda u: (u.passed, u.since)).queue, 0

    def peek(self) -> Reservation | None:
        found = self._next()
        if found is None:
            return None
        e = found[0][found[1]]
        return Reservation(e.job_id, e.user, e.priority)

    def pop(self) -> Reservation | None:
        found = self._next()
        if found is None:
            return None
        e = found[0].pop(found[1])
        u = self._users[e.user]
        if self.policy == "fair":
            self._vtime = u.passed
            u.passed += 1.0 / u.weight
            u.unrefunded_pops += 1
        u.count -= 1
        job = self._jobs[e.job_id]
        job[1] -= 1
        if job[1] == 0:
            del self._jobs[e.job_id]
        return Reservation(e.job_id, e.user, e.priority)

    def refund(self, user: Hashable) -> None:
        if user not in self._users:
            raise ValueError(f"refund: user {user!r} was never queued")
        if self.policy != "fair":
            return
        u = self._users[user]
        if u.unrefunded_pops == 0:
            raise ValueError(f"refund: user {user!r} has no pop left to refund")
        u.unrefunded_pops -= 1
        u.passed -= 1.0 / u.weight

    def steal(self, max_count: int, pinned=()) -> list[Reservation]:
        """Work stealing's victim side: pops up to max_count from the head while its job is not
        pinned, refunding each fair charge."""
        if isinstance(max_count, bool) or not isinstance(max_count, int):
            raise TypeError(f"max_count must be an integer, got {type(max_count).__name__}")
        if max_count < 0:
            raise ValueError(f"max_count must be >= 0, got {max_count}")
        keep = {int(j) for j in pinned}
        out: list[Reservation] = []
        while len(out) < max_count and (head := self.peek()) is not None and head.job_id not in keep:
            self.pop()
            self.refund(head.user)
            out.append(head)
        return out

    def cancel(self, job_id: int) -> int:
        job = self._jobs.pop(job_id, None)
        if job is None:
            return 0
        u = self._users[job[0]]
        if self.policy == "fair":
            u.queue = [e for e in u.queue if e.job_id != job_id]
        else:
            self._entries = [e for e in self._entries if e.job_id != job_id]
        u.count -= job[1]
        return job[1]

    def count(self, user: Hashable) -> int:
        return self._users[user].count if user in self._users else 0

    def counts(self) -> dict:
        return {user: u.count for user, u in self._users.items() if u.count}

    def push_many(self, job_ids, users, priorities=None) -> None:
        priorities = [0] * len(job_ids) if priorities is None else priorities
        for job_id, user, priority in zip(job_ids, users, priorities, strict=True):
            self.push(int(job_id), int(user), int(priority))

    def pop_many(self, max_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        popped = []
        while len(popped) < max_count and (r := self.pop()) is not None:
            popped.append(r)
        all_int = all(isinstance(user, int) for user in self._users)
        return (
            np.asarray([r.job_id for r in popped], dtype=np.int64),
            np.asarray([r.user for r in popped], dtype=np.int64 if all_int else object),
            np.asarray([r.priority for r in popped], dtype=np.int64),
        )

    def __len__(self) -> int:
        return sum(u.count for u in self._users.values())

    def __bool__(self) -> bool:
        return len(self) > 0
