"""`ExecutorLoop`: the thread behind a SparrowExecutor, trio running its Client.

Other threads hand calls over to it (in order; one wake-up of the trio thread for what is handed over
until it runs) with the futures those calls make, and the loop keeps the futures still waiting for their
tasks. It stops once it is closed and no future waits any more: closing lets the tasks already submitted
run to their outcomes, as `shutdown(wait=False)` does for the standard executors; the executor cancels
them first where it is asked to.

It holds no reference to its executor, so an executor dropped without `shutdown()` is collected and
closes its loop (weakref.finalize). At the interpreter's exit, as for the standard executors
(`threading._register_atexit`), submitting raises RuntimeError and every loop still open is closed and
joined first: the tasks submitted get their outcomes before the process ends.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from functools import partial

import trio

from .core import Client
from .job import Job

logger = logging.getLogger(__name__)

_open_loops: weakref.WeakSet[ExecutorLoop] = weakref.WeakSet()
_exit_lock = threading.Lock()
_exiting = False  # the interpreter is shutting down: no new work


class ExecutorLoop:
    """The trio thread of one executor's `client` (started by `start`)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.closed = False  # no more work accepted (shutdown, a dropped executor, the interpreter's exit)
        self.pending: set[concurrent.futures.Future] = set()  # futures whose tasks have no outcome here yet
        self.token: trio.lowlevel.TrioToken | None = None
        self._incoming: list[Callable[[], None]] = []  # calls for the trio thread, in order (under lock)
        self._stop: trio.Event | None = None
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=trio.run, args=(self._main,), name="sparrow-executor", daemon=True)

    def start(self) -> None:
        """Run the thread and connect. Raises what connecting raised (ConnectionLost), and RuntimeError
        once the interpreter is shutting down."""
        with _exit_lock:
            if _exiting:
                raise RuntimeError("cannot start an executor after interpreter shutdown")
            _open_loops.add(self)
        self.thread.start()
        self._ready.wait()
        if self._failure is not None:
            self.thread.join()
            with _exit_lock:  # nothing to close at the exit: it never ran
                _open_loops.discard(self)
            raise self._failure

    async def _main(self) -> None:
        try:
            async with self.client:
                self.token = trio.lowlevel.current_trio_token()
                self._stop = trio.Event()
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:
            if self._ready.is_set():
                raise
            self._failure = exc  # could not connect: re-raised by start
        finally:
            self._ready.set()

    def hand_over(self, jobs: Iterable[Job], calls: Iterable[Callable[[], None]]) -> None:
        """Have the trio thread make `calls` (after those handed over before), which settle the futures of
        `jobs` (their `owner`s).

        Error handling: RuntimeError once closed, as the standard executors raise it."""
        with self.lock:
            if _exiting:
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")
            if self.closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            pending = self.pending
            for job in jobs:
                pending.update(job.owner)
            self._queue(calls)

    def call_soon(self, *calls: Callable[[], None]) -> None:
        """Have the trio thread make `calls`, open or closed (nothing once it has stopped)."""
        with self.lock:
            self._queue(calls)

    def settled(self, futures: Iterable[concurrent.futures.Future]) -> None:
        """In the trio thread: `futures` have their outcomes (or were cancelled here); stop if closed and
        none is left."""
        with self.lock:
            self.pending.difference_update(futures)
            drained = self.closed and not self.pending
        if drained:
            assert self._stop is not None  # set by the trio thread before start returns
            self._stop.set()

    def close(self) -> None:
        """Accept no more work; stop once every pending future is settled (at once if none is)."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self._queue((partial(self.settled, ()),))

    def join(self) -> None:
        self.thread.join()

    def _queue(self, calls: Iterable[Callable[[], None]]) -> None:
        """(Holding lock.) Queue `calls` for the trio thread; nothing once it has stopped."""
        wake = not self._incoming
        self._incoming.extend(calls)
        if wake:
            assert self.token is not None  # set by the trio thread before start returns
            with contextlib.suppress(trio.RunFinishedError):
                self.token.run_sync_soon(self._run_incoming)

    def _run_incoming(self) -> None:
        """In the trio thread: what was handed over, in order."""
        with self.lock:
            calls, self._incoming = self._incoming, []
        for call in calls:
            try:
                call()
            except Exception:  # a bug: the trio loop of the client must go on
                logger.exception("a call handed over to the executor's trio thread failed")


def _at_exit() -> None:
    """The interpreter is exiting: no new work; every open loop runs its submitted tasks to their outcomes."""
    global _exiting
    with _exit_lock:
        _exiting = True
        loops = list(_open_loops)
    for loop in loops:
        loop.close()
    for loop in loops:
        loop.join()


# Before the interpreter joins its threads and runs the atexit hooks, as concurrent.futures.thread does: a
# task submitted by an atexit hook is refused then, and the tasks submitted before still run.
threading._register_atexit(_at_exit)  # type: ignore[attr-defined]
