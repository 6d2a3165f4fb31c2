"""A process executor's idle workers, kept per user: a worker that ran a task of one user never runs another's.

A worker belongs to the user of the first task it is given (its `user`; None until then: a fresh worker, which
any user may take). `take(user)` gives an idle worker of `user`, the one idle longest (so a user's tasks go
round its workers, as a single queue did), else a fresh one, else None: the pool then starts a worker, or, at
its limit of workers, retires the one idle longest of all (`oldest`) to make room. Each user's idle workers are
a deque, and one dict keeps all of them in the order they became idle: `put`, `take` and `oldest` are O(1).
"""

from __future__ import annotations

from collections import deque
from typing import Any

# users with no idle worker whose empty deques are kept (for the next put) before they are dropped
KEPT_EMPTY = 64


class IdleWorkers:
    """The idle workers of one executor, by user (each has a `user` attribute: a name, or None if fresh)."""

    __slots__ = ("_by_user", "_since")

    def __init__(self) -> None:
        self._by_user: dict[str | None, deque] = {}
        self._since: dict[Any, None] = {}  # every idle worker, in the order they became idle

    def __len__(self) -> int:
        return len(self._since)

    def __contains__(self, worker: object) -> bool:
        return worker in self._since

    def put(self, worker: Any) -> None:
        """`worker` is idle now (behind the other idle workers of its user)."""
        workers = self._by_user.get(worker.user)
        if workers is None:
            if len(self._by_user) > KEPT_EMPTY:  # users seen once do not add up
                self._by_user = {user: kept for user, kept in self._by_user.items() if kept}
            workers = self._by_user[worker.user] = deque()
        workers.append(worker)
        self._since[worker] = None

    def take(self, user: str) -> Any:
        """An idle worker of `user` (the one idle longest), else a fresh one; it is no longer idle. None if
        there is neither."""
        workers = self._by_user.get(user)
        if not workers:
            workers = self._by_user.get(None)
            if not workers:
                return None
        worker = workers.popleft()
        del self._since[worker]
        return worker

    def can_serve(self, user: str) -> bool:
        """Whether `take(user)` would give a worker."""
        return bool(self._by_user.get(user) or self._by_user.get(None))

    def oldest(self) -> Any:
        """The worker idle longest, of any user (None if none is idle); it stays idle until `remove`d."""
        return next(iter(self._since), None)

    def remove(self, worker: Any) -> bool:
        """Forget `worker` (it died, or is retired); whether it was idle."""
        if self._since.pop(worker, 0) is not None:  # not idle (an idle one maps to None)
            return False
        self._by_user[worker.user].remove(worker)
        return True

    def users(self) -> dict[str | None, int]:
        """How many workers are idle per user (None: fresh ones)."""
        return {user: len(workers) for user, workers in self._by_user.items() if workers}
