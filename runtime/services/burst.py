"""One write per peer per burst: what a service sends while it handles one read (or one event) waits, in order,
until that handling ends, then leaves together.

A node monitor given a job's tasks at once launches one and hands the others ahead to its worker, and a worker
that ran them answers them in one read; sent as they were made, each task cost a write to the worker, and the
outcomes left for the scheduler in two writes (the last ones once no task was bound). `Burst` is held (`with
burst:`, nested or not) around such handling; the senders that use it queue while it is held
(`Burst.held`), and each flush registered with `on_release` runs once the outermost hold ends, in the order
registered (an exception leaving the hold flushes all the same: nothing queued is lost). Nothing waits for a
clock: a burst ends when the code that made it returns.

Work may also be put off to the end of a burst: each hook registered with `on_settle` runs as the outermost hold
is about to end, still held (what it sends joins the burst), before the flushes. A node monitor reports the
outcomes of a worker's read there: its logic asks ahead once for all of them, not once per task.
"""

from __future__ import annotations

from collections.abc import Callable


class Burst:
    """A hold around a service's handling of one read or event; its flushes run when the outermost ends."""

    __slots__ = ("_depth", "_flushes", "_settles", "held")

    def __init__(self) -> None:
        self._depth = 0
        self._flushes: list[Callable[[], None]] = []
        self._settles: list[Callable[[], None]] = []
        self.held = False  # an attribute, not a property: senders ask once per message

    def on_release(self, flush: Callable[[], None]) -> None:
        """Call `flush()` whenever the outermost hold ends (after the flushes registered before it)."""
        self._flushes.append(flush)

    def on_settle(self, settle: Callable[[], None]) -> None:
        """Call `settle()` whenever the outermost hold is about to end, still held, before the flushes (after the
        hooks registered before it)."""
        self._settles.append(settle)

    def __enter__(self) -> None:
        self._depth += 1
        self.held = True

    def __exit__(self, *exc: object) -> None:
        if self._depth > 1:
            self._depth -= 1
            return
        try:
            for settle in self._settles:
                settle()
        finally:
            self._depth = 0
            self.held = False
            for flush in self._flushes:
                flush()
