"""The value store of one node monitor, sans-I/O: the results kept here, their owners, and a byte limit.

A value is kept under a random key (KEY_SIZE bytes from `secrets`: unguessable, so in the insecure mode
the key is the capability to read it), with the user its task ran as and the client session that
submitted it. Past `limit` bytes held the store refuses a new value (StoreFull, naming the sizes): the
task's outcome then fails with that reason; nothing is spilled to disk. A client's upload reserves its
size first (`reserve`: refused the same way), so uploads under way cannot together pass the limit; the
value then goes in under that reservation (`put(..., reserved=True)`) or gives it back (`unreserve`).
Values leave by `release`
(a client's ReleaseValues, for its own user only) or `release_session` (its client is gone: the values of
that session that belong to the session's user only, so a client that claims another user's id drops
none of that user's).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from ..wire.limits import KEY_SIZE
from .shared import SharedValue

Value = bytes | bytearray | SharedValue  # a value's bytes, or its sealed memory file (shared.py)


class StoreFull(Exception):
    """A value would take the store past its limit."""


class Kept:
    """One value held: its bytes, the user its task ran as, and its client session."""

    __slots__ = ("session", "user", "value")

    def __init__(self, value: Value, user: str, session: str) -> None:
        self.value = value
        self.user = user
        self.session = session


class ValueStore:
    """Values by key, at most `limit` bytes of them (`held`)."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"memory_limit must be an int of bytes >= 0, got {limit!r}")
        self.limit = limit
        self.held = 0
        self.released = 0  # values released so far (any way)
        self._values: dict[bytes, Kept] = {}
        self._sessions: dict[str, set[bytes]] = {}

    def __len__(self) -> int:
        return len(self._values)

    def put(self, value: Value, user: str = "", session: str = "", *, reserved: bool = False) -> bytes:
        """Keep `value`; its new key. Raises StoreFull if it does not fit under the limit (`reserved`: its
        size was reserved, by `reserve`, and is held already)."""
        size = len(value)
        if reserved:
            self.held -= size
        else:
            self._check(size, "a result")
        key = secrets.token_bytes(KEY_SIZE)
        self._values[key] = Kept(value, user, session)
        self.held += size
        if session:
            self._sessions.setdefault(session, set()).add(key)
        return key

    def reserve(self, size: int) -> None:
        """Hold `size` bytes for a value on its way (an upload). Raises StoreFull if they do not fit."""
        self._check(size, "an upload")
        self.held += size

    def unreserve(self, size: int) -> None:
        """Give back a reservation whose value did not come."""
        self.held -= size

    def _check(self, size: int, what: str) -> None:
        if self.held + size > self.limit:
            raise StoreFull(
                f"the node monitor's value store is full: {self.held:,} of {self.limit:,} bytes held, so {what} of "
                f"{size:,} bytes was refused (raise --memory-limit, or release values: drop futures you no longer need)"
            )

    def get(self, key: bytes, user: str | None = None) -> Kept | None:
        """The value under `key`, if it is here and (`user` not None) belongs to `user`."""
        kept = self._values.get(key)
        if kept is None or (user is not None and kept.user != user):
            return None
        return kept

    def release(self, keys: Iterable[bytes], user: str | None = None) -> int:
        """Drop the values under `keys` (only `user`'s, unless None); how many were dropped."""
        dropped = 0
        for key in keys:
            kept = self._values.get(key)
            if kept is not None and (user is None or kept.user == user):
                self._drop(key, kept)
                dropped += 1
        return dropped

    def release_session(self, session: str, user: str | None = None) -> int:
        """Drop the values of the client session `session` that belong to `user` (None: all of them); how many
        were dropped."""
        if user is not None:
            return self.release(list(self._sessions.get(session, ())), user)
        keys = self._sessions.pop(session, ())
        for key in keys:
            kept = self._values.get(key)
            if kept is not None:
                kept.session = ""  # its session's set is gone already
                self._drop(key, kept)
        return len(keys)

    def _drop(self, key: bytes, kept: Kept) -> None:
        del self._values[key]
        self.held -= len(kept.value)
        self.released += 1
        if kept.session:
            keys = self._sessions.get(kept.session)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._sessions[kept.session]
