"""The client's book of the values its tasks left at node monitors, sans-I/O: who holds each, who made it.

A task whose result is over its node monitor's inline limit ends with a reference (ValueRef) instead of
the value. The value is held while its owner (a future, a JobHandle) lives, and by each dependent task
that takes it until that task ends; once nobody holds it, it is released: its reference goes to
`to_release`, which the shell sends to the holder (ReleaseValues). `keep` says which task made each
value still held, so a lost value can be recomputed from that task's call (lineage); it names the job
weakly, so that the book keeps no owner alive (a dependent that takes the value keeps its job).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from ..wire.messages import ValueRef

if TYPE_CHECKING:
    from .job import Job


class ValueBook:
    """Holds per value key, the references to release, and the task that made each value."""

    def __init__(self) -> None:
        self.holds: dict[bytes, int] = {}
        self.refs: dict[bytes, ValueRef] = {}
        self._made: dict[bytes, tuple[weakref.ref, int]] = {}  # key -> (its job, weakly; its task)
        self.to_release: list[ValueRef] = []
        self.released = 0

    def __len__(self) -> int:
        """How many values are held."""
        return len(self.holds)

    def keep(self, ref: ValueRef, job: Job, task: int) -> None:
        """Task `task` of `job` ended with `ref`: its owner holds it from now on."""
        self._made[ref.key] = (weakref.ref(job), task)
        self.hold(ref)

    def maker(self, key: bytes) -> tuple | None:
        """(job, task) that made the value `key`, if the value is held and the job still known."""
        made = self._made.get(key)
        if made is None:
            return None
        job = made[0]()
        return None if job is None else (job, made[1])

    def hold(self, ref: ValueRef) -> None:
        key = ref.key
        self.holds[key] = self.holds.get(key, 0) + 1
        self.refs[key] = ref

    def drop(self, ref: ValueRef) -> None:
        """One holder of `ref` is done with it; the last one releases it."""
        key = ref.key
        count = self.holds.get(key)
        if count is None:
            return
        if count > 1:
            self.holds[key] = count - 1
            return
        del self.holds[key]
        del self.refs[key]
        self._made.pop(key, None)
        self.to_release.append(ref)
        self.released += 1

    def forget(self, ref: ValueRef) -> None:
        """`ref`'s value is lost (its holder died): nothing to release, no holds left."""
        self.holds.pop(ref.key, None)
        self.refs.pop(ref.key, None)
        self._made.pop(ref.key, None)

    def release_all(self) -> None:
        """Release every value held (the client closes)."""
        self.to_release.extend(self.refs.values())
        self.released += len(self.refs)
        self.holds.clear()
        self.refs.clear()
        self._made.clear()

    def take(self) -> list[ValueRef]:
        """The references to release now."""
        out, self.to_release = self.to_release, []
        return out
