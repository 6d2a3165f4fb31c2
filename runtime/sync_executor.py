"""SparrowExecutor: a `concurrent.futures.Executor` backed by a Sparrow cluster.

A background thread runs trio with one Client. `submit` sends a job of one task; `map` sends jobs of up
to `chunksize` tasks (one per item), so the scheduler batch-samples probes for each chunk. Tasks are
pickled in the caller's thread; the hand-over to the trio thread does not block (`run_sync_soon`).

Error handling: the constructor raises ConnectionLost if no scheduler accepts the connection. An
exception raised by a task is raised by `Future.result()` (and by `map`'s iterator) with the remote
traceback as `__cause__`; a task that got no result of its own raises TaskFailed. Submitting after
`shutdown` raises RuntimeError, like the standard executors.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from functools import partial
from collections.abc import Callable, Iterable, Iterator, Sequence

import trio

from .address import Address
from .client import Client, build_submit
from .handshake import DEFAULT_HANDSHAKE_TIMEOUT
from .task_codec import pack_task, unpack_outcome

DEFAULT_CHUNKSIZE = 256


class SparrowExecutor(concurrent.futures.Executor):
    """Run callables on the cluster behind `schedulers` (addresses) as `user`."""

    def __init__(
        self,
        schedulers: Sequence[str | Address],
        *,
        secret: str | bytes | None = None,
        secret_file: str | None = None,
        user: str = "",
        priority: int = 0,
        chunksize: int = DEFAULT_CHUNKSIZE,
        connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    ) -> None:
        if not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {chunksize!r}")
        self._client = Client(schedulers, secret=secret, secret_file=secret_file, handshake_timeout=connect_timeout)
        self.user = user
        self.priority = priority
        self.chunksize = chunksize
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._shutdown = False
        self._pending: set[concurrent.futures.Future] = set()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), name="sparrow-executor", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            self._thread.join()
            raise self._failure

    async def _main(self) -> None:
        try:
            async with self._client:
                self._token = trio.lowlevel.current_trio_token()
                self._stop = trio.Event()
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:
            if self._ready.is_set():
                raise
            self._failure = exc  # could not connect: re-raised by __init__
        finally:
            self._ready.set()

    def submit(self, fn: Callable, /, *args, **kwargs) -> concurrent.futures.Future:
        payload = pack_task(fn, args, kwargs)
        return self._submit_job([payload])[0]

    def map(
        self, fn: Callable, *iterables: Iterable, timeout: float | None = None, chunksize: int | None = None
    ) -> Iterator:
        """Like Executor.map, but each chunk of up to `chunksize` items (default: the executor's) is one job."""
        size = self.chunksize if chunksize is None else chunksize
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {size!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        futures: list[concurrent.futures.Future] = []
        items = zip(*iterables)  # noqa: B905 - stops at the shortest, as Executor.map does
        while chunk := list(itertools.islice(items, size)):
            futures += self._submit_job([pack_task(fn, args) for args in chunk])
        return _results_in_order(futures, deadline)

    def _submit_job(self, payloads: list[bytes]) -> list[concurrent.futures.Future]:
        msg = build_submit(payloads, self.user, self.priority, None, None, self._client.max_frame)
        futures = [concurrent.futures.Future() for _ in payloads]
        for future in futures:
            future.set_running_or_notify_cancel()

        def on_outcome(task: int, ok: bool, payload: bytes, error: str) -> None:
            future = futures[task]
            with self._lock:
                self._pending.discard(future)
            try:
                value = unpack_outcome(ok, payload, error)
            except BaseException as exc:  # noqa: BLE001 - the task's exception (or an unpicklable result)
                settle = partial(future.set_exception, exc)
            else:
                settle = partial(future.set_result, value)
            try:
                settle()
            except concurrent.futures.InvalidStateError:
                pass  # failed by shutdown(cancel_futures=True) already

        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._pending.update(futures)
            self._token.run_sync_soon(self._client.send_job, msg, on_outcome)
        return futures

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; with `wait`, wait for submitted tasks' outcomes, then disconnect.

        `cancel_futures` fails the tasks still pending at once (they may still run remotely).
        """
        with self._lock:
            already = self._shutdown
            self._shutdown = True
            pending = list(self._pending)
        if cancel_futures:
            for future in pending:
                if not future.done():
                    try:
                        future.set_exception(concurrent.futures.CancelledError("cancelled by shutdown"))
                    except concurrent.futures.InvalidStateError:
                        pass
        if not already:
            if wait:
                concurrent.futures.wait(pending)
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        if wait:
            self._thread.join()


def _results_in_order(futures: list[concurrent.futures.Future], deadline: float | None) -> Iterator:
    try:
        futures.reverse()
        while futures:
            future = futures.pop()
            yield future.result() if deadline is None else future.result(deadline - time.monotonic())
    finally:
        for future in futures:
            future.cancel()
