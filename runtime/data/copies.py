"""Copies of other node monitors' values that a node monitor fetched for its tasks, sans-I/O: kept a while, so
that its next tasks that take the same input use the copy instead of fetching the value again (a Dask
distributed worker keeps the dependencies it fetched the same way). Without them a shuffle of n outputs that
each read every input moves every input n times instead of once per node monitor.

Only a `SharedValue` is kept (a sealed, read-only memory file: no task can change it, a worker maps it copy on
write), under its holder's address and key: a value never changes under its random key, so a copy is never
stale. A copy fetched for a task of one user (under TLS its holder sends a value to a node monitor for its
user's tasks only) is kept under that user too, and given to that user's tasks only. At most `limit` bytes
of copies are held, the least recently used dropped first to make room, and
none that went unused for `idle` seconds (`expire`). A copy is only ever given to this node monitor's own
tasks, never served to its peers.
"""

from __future__ import annotations

from collections import OrderedDict

from .shared import SharedValue

COPY_IDLE = 10.0  # seconds a copy is kept without a task taking it
COPY_SHARE = 4  # a node monitor keeps at most 1/COPY_SHARE of its memory_limit in copies,
COPY_MAX = 1024**3  # and never more than this many bytes


def copy_limit(memory_limit: int) -> int:
    """The bytes of copies a node monitor with this `memory_limit` keeps."""
    return min(memory_limit // COPY_SHARE, COPY_MAX)


class Copies:
    """Fetched values by (holder address, key, the user fetched for), at most `limit` bytes of them (`held`)."""

    def __init__(self, limit: int, idle: float = COPY_IDLE) -> None:
        if limit < 0 or idle < 0:
            raise ValueError(f"a copy limit and idle time must be >= 0, got {limit!r} and {idle!r}")
        self.limit = limit
        self.idle = idle
        self.held = 0
        self.hits = 0  # tasks' inputs taken from a copy instead of fetched
        self._copies: OrderedDict[tuple[str, bytes, str | None], tuple[SharedValue, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._copies)

    def get(self, address: str, key: bytes, size: int, now: float, user: str | None = None) -> SharedValue | None:
        """The copy of the value `key` at `address` fetched for `user`'s tasks, if one of `size` bytes is kept (it
        is then used at `now`)."""
        name = (address, key, user)
        entry = self._copies.get(name)
        if entry is None or len(entry[0]) != size:
            return None
        self._copies[name] = (entry[0], now)
        self._copies.move_to_end(name)
        self.hits += 1
        return entry[0]

    def put(
        self, address: str, key: bytes, value: bytes | bytearray | SharedValue, now: float, user: str | None = None
    ) -> bool:
        """Keep `value` (fetched at `now` for `user`'s tasks) if it is a SharedValue that fits under the limit,
        dropping the least recently used copies to make room; whether it is kept."""
        size = len(value)
        name = (address, key, user)
        if type(value) is not SharedValue or size > self.limit or name in self._copies:
            return False
        while self.held + size > self.limit:
            self._drop_oldest()
        self._copies[name] = (value, now)
        self.held += size
        return True

    def expire(self, now: float) -> int:
        """Drop the copies unused since `now - idle`; how many were dropped."""
        dropped = 0
        while self._copies and next(iter(self._copies.values()))[1] <= now - self.idle:
            self._drop_oldest()
            dropped += 1
        return dropped

    def clear(self) -> None:
        self._copies.clear()
        self.held = 0

    def _drop_oldest(self) -> None:
        _, (value, _) = self._copies.popitem(last=False)
        self.held -= len(value)
