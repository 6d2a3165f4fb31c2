"""SparrowExecutor: a `concurrent.futures.Executor` backed by a Sparrow cluster.

A background thread runs trio with one Client (failover, heartbeats and retries are the Client's:
client.py). `submit` sends a job of one task; `map` sends jobs of up to `chunksize` tasks (one per
item), so the scheduler batch-samples probes for each chunk, and consumes its iterables lazily with
at most `buffersize` tasks submitted and not yet yielded (as Python 3.14's `Executor.map`), so a map
over millions of items runs in flat memory. Tasks are pickled in the caller's thread; the hand-over
to the trio thread does not block (`run_sync_soon`).

`submit` takes futures of this executor anywhere in its arguments (nested in lists, tuples, sets and
dict values, as Dask's `Client.submit`): the task is sent once they are done, with their values, and
the tasks that become ready in one pass of the trio loop (the dependents of a task that just finished)
go as one job; if an input fails, the task does not run and fails with DependencyFailed; if an input
is cancelled, so is the task (dependencies.py, docs/runtime.md "Dependencies and Dask").

`Future.cancel()` returns True while the task has no outcome (the client is not told when a task
starts): the scheduler then never launches it, or, if it is already running, discards its result.
`shutdown(cancel_futures=True)` cancels that way every future not done.

Error handling: the constructor raises ConnectionLost if no scheduler accepts the connection (or,
without addresses, if no `sparrow local` runs here). An exception raised by a task is raised by
`Future.result()` (and by `map`'s iterator) with the remote traceback as `__cause__`; a task that
got no result of its own raises TaskFailed (TaskTimeout past `timeout`). Submitting after `shutdown`
raises RuntimeError, like the standard executors.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial

import cloudpickle
import trio

from ..wire.address import Address
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.handshake import DEFAULT_HANDSHAKE_TIMEOUT
from ..wire.messages import CANCELLED
from ..wire.task_codec import pack_task, unpack_outcome
from ..wire.tls import TLS
from .core import DEFAULT_RETRIES, DEFAULT_SCHEDULER_TIMEOUT, Client, JobHandle, build_submit
from .dependencies import Dependencies, Settler, TickBatch, Waiting, dependency_failed, oversize_problem, split_jobs
from .task_inputs import Inputs, find_inputs, pack_dependent, pack_template

DEFAULT_CHUNKSIZE = 256
DEFAULT_BUFFERSIZE = 8 * DEFAULT_CHUNKSIZE  # map's tasks submitted and not yet yielded


class _Job:
    """A submitted job's handle, set in the trio thread once it is sent."""

    __slots__ = ("handle",)

    def __init__(self) -> None:
        self.handle: JobHandle | None = None


class SparrowFuture(concurrent.futures.Future):
    """A Future whose `cancel()` also cancels its task on the cluster (and the tasks that take its result)."""

    def __init__(self, executor: SparrowExecutor, job: _Job | None = None, task: int = 0) -> None:
        super().__init__()
        self._executor = executor
        self._job = job  # None while it waits for its inputs
        self._task = task

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self.set_running_or_notify_cancel()  # so concurrent.futures.wait and as_completed see it done
        self._executor._cancel_remote(self)
        return True

    def __reduce__(self):
        raise TypeError(
            "a future is an input only as an argument of SparrowExecutor.submit (also nested in lists, tuples, "
            "sets and dict values), not inside other objects"
        )


# how an input ended, for the tasks that wait for it
DONE, FAILED, CANCELLED_INPUT = "done", "failed", "cancelled"


class SparrowExecutor(concurrent.futures.Executor):
    """Run callables on the cluster behind `schedulers` (addresses; None: the `sparrow local` of this
    host) as `user` (under TLS, by default the user of the client certificate `tls`; see Client for
    the credentials). `retries`, `retry_exceptions`, `scheduler_timeout` and `max_frame` (the largest
    frame, so the largest task with its inputs, and result) are the Client's; `timeout` (seconds,
    optional) is each task's time limit."""

    def __init__(
        self,
        schedulers: Sequence[str | Address] | str | None = None,
        *,
        secret: str | bytes | None = None,
        secret_file: str | None = None,
        tls: TLS | None = None,
        user: str = "",
        priority: int = 0,
        chunksize: int = DEFAULT_CHUNKSIZE,
        timeout: float | None = None,
        retries: int = DEFAULT_RETRIES,
        retry_exceptions: bool = False,
        scheduler_timeout: float = DEFAULT_SCHEDULER_TIMEOUT,
        connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        if not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {chunksize!r}")
        self._client = Client(
            schedulers, secret=secret, secret_file=secret_file, tls=tls, handshake_timeout=connect_timeout,
            retries=retries, retry_exceptions=retry_exceptions, scheduler_timeout=scheduler_timeout,
            max_frame=max_frame,
        )  # fmt: skip
        build_submit([b""], user, priority, None, None, timeout=timeout)  # checks them now, not at each submit
        self.user = user
        self.priority = priority
        self.chunksize = chunksize
        self.timeout = timeout
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._shutdown = False
        self._pending: set[concurrent.futures.Future] = set()
        self._deps = Dependencies()  # the trio thread's: futures waiting for other futures
        self._ready_tasks = TickBatch(self._send_ready)
        self._settle_input = Settler(self._settle_one)
        self._thread = threading.Thread(target=trio.run, args=(self._main,), name="sparrow-executor", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            self._thread.join()
            raise self._failure

    @property
    def client(self) -> Client:
        """The Client behind this executor (its `failovers`, `connected_to`)."""
        return self._client

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
        inputs = find_inputs(args, kwargs, lambda obj: isinstance(obj, SparrowFuture))
        if inputs is not None:
            return self._submit_dependent(fn, inputs)
        payload = pack_task(fn, args, kwargs)
        return self._submit_job([payload])[0]

    def submit_many(self, calls: Iterable[tuple[Callable, tuple, dict]]) -> list[SparrowFuture]:
        """Submit calls `(fn, args, kwargs)` together as one job (as few jobs as the frame limit allows),
        so the scheduler batch-samples them together; a future per call. Their arguments are sent as
        they are (futures as inputs: `submit`). Raises ValueError before anything is sent if one call is
        over the frame limit."""
        payloads = [pack_task(fn, args, kwargs) for fn, args, kwargs in calls]
        for payload in payloads:
            problem = oversize_problem(len(payload), self._client.max_frame)
            if problem is not None:
                raise ValueError(problem)
        futures: list[SparrowFuture] = []
        for group in split_jobs([len(p) for p in payloads], self._client.max_frame):
            futures += self._submit_job(payloads[group.start : group.stop])
        return futures

    def _submit_dependent(self, fn: Callable, inputs: Inputs) -> SparrowFuture:
        """A task that takes futures' results: held (in the trio thread) until they are done."""
        known: dict[SparrowFuture, bytes] = {}  # inputs done now, pickled here rather than in the trio thread
        for future in inputs.keys:
            if future._executor is not self:
                raise ValueError(f"{future!r} is a future of another executor")
            if future.done() and not future.cancelled() and future.exception() is None:
                known[future] = cloudpickle.dumps(future.result())
        template = pack_template(fn, inputs)
        problem = oversize_problem(len(template) + sum(map(len, known.values())), self._client.max_frame)
        if problem is not None:
            raise ValueError(problem)
        future = SparrowFuture(self)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._pending.add(future)
            self._token.run_sync_soon(partial(self._hold, future, template, inputs, known))
        return future

    # -- in the trio thread: futures that wait for other futures ----------------------------------

    def _hold(self, future: SparrowFuture, template: bytes, inputs: Inputs, known: dict) -> None:
        self._deps.wait(future, template, inputs)
        for upstream in inputs.keys:
            if upstream in known:
                self._settle_input(upstream, DONE, known[upstream])
            elif upstream.cancelled():
                self._settle_input(upstream, CANCELLED_INPUT)
            elif upstream.done():  # done since submit looked
                error = upstream.exception()
                if error is None:
                    self._settle_input(upstream, DONE, cloudpickle.dumps(upstream.result()))
                else:
                    self._settle_input(upstream, FAILED, error)

    def _settle_one(self, upstream: SparrowFuture, how: str, detail=None) -> None:
        """`upstream` ended (DONE with its pickled value, FAILED with its exception, or CANCELLED_INPUT):
        its waiting dependents become ready, fail or are cancelled."""
        if how == DONE:
            for waiting in self._deps.done(upstream, detail):
                self._ready_tasks.add(waiting)
            return
        for waiting, path in self._deps.failed(upstream):
            future = waiting.target
            if how == CANCELLED_INPUT:
                if concurrent.futures.Future.cancel(future):  # not SparrowFuture.cancel: it was never sent
                    future.set_running_or_notify_cancel()
                    self._settle_input(future, CANCELLED_INPUT)
            else:
                error = dependency_failed(path, detail)
                self._end_unsent(future, error)
            with self._lock:
                self._pending.discard(future)

    def _end_unsent(self, future: SparrowFuture, error: BaseException) -> None:
        """Fail a future that was never sent, and what waits for it."""
        try:
            future.set_exception(error)
        except concurrent.futures.InvalidStateError:
            return  # cancelled meanwhile
        self._settle_input(future, FAILED, error)

    def _send_ready(self, ready: list[Waiting]) -> None:
        """Send the tasks whose inputs are all done, as one job (or as few as the frame limit allows)."""
        payloads, futures = [], []
        for waiting in ready:
            future = waiting.target
            if future.done():
                continue  # cancelled while it waited
            payload = pack_dependent(waiting.template, waiting.values)
            problem = oversize_problem(len(payload), self._client.max_frame)
            if problem is not None:
                with self._lock:
                    self._pending.discard(future)
                self._end_unsent(future, ValueError(problem))
                continue
            payloads.append(payload)
            futures.append(future)
        for group in split_jobs([len(p) for p in payloads], self._client.max_frame):
            self._sender(payloads[group.start : group.stop], futures[group.start : group.stop])()

    def map(
        self,
        fn: Callable,
        *iterables: Iterable,
        timeout: float | None = None,
        chunksize: int | None = None,
        buffersize: int | None = DEFAULT_BUFFERSIZE,
    ) -> Iterator:
        """Like Executor.map, but each chunk of up to `chunksize` items (default: the executor's) is
        one job, and at most `buffersize` tasks are submitted and not yet yielded (None: all at once)."""
        size = self.chunksize if chunksize is None else chunksize
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {size!r}")
        if buffersize is not None and (not isinstance(buffersize, int) or buffersize < 1):
            raise ValueError(f"buffersize must be an int >= 1 or None, got {buffersize!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        items = zip(*iterables)
        window: deque[concurrent.futures.Future] = deque()
        step = size if buffersize is None else min(size, buffersize)

        def top_up() -> None:
            """Submit chunks while the window has room for one."""
            while buffersize is None or buffersize - len(window) >= step:
                chunk = list(itertools.islice(items, step if buffersize is None else buffersize - len(window)))
                if not chunk:
                    return
                for start in range(0, len(chunk), size):
                    window.extend(self._submit_job([pack_task(fn, args) for args in chunk[start : start + size]]))

        top_up()  # the first window now, as Executor.map submits at the call
        return _results_in_order(window, top_up, deadline)

    def _submit_job(self, payloads: list[bytes]) -> list[concurrent.futures.Future]:
        futures = [SparrowFuture(self) for _ in payloads]
        send = self._sender(payloads, futures)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._pending.update(futures)
            self._token.run_sync_soon(send)
        return futures

    def _sender(self, payloads: list[bytes], futures: list[SparrowFuture]) -> Callable[[], None]:
        """A function that sends `payloads` as one job whose outcomes settle `futures` (call it in the
        trio thread); raises ValueError/TypeError now for a bad job."""
        msg = build_submit(payloads, self.user, self.priority, None, None, self._client.max_frame, self.timeout)
        job = _Job()
        for task, future in enumerate(futures):
            future._job, future._task = job, task

        def on_outcome(task: int, ok: bool, payload: bytes, error: str, failure: int) -> None:
            future = futures[task]
            with self._lock:
                self._pending.discard(future)
            error_raised = None
            try:
                value = unpack_outcome(ok, payload, error, failure)
            except BaseException as exc:
                settle = partial(future.set_exception, exc)
                error_raised = exc
            else:
                settle = partial(future.set_result, value)
            try:
                settle()
            except concurrent.futures.InvalidStateError:
                pass  # cancelled here already
            if self._deps.awaited(future):
                if failure == CANCELLED or future.cancelled():
                    self._settle_input(future, CANCELLED_INPUT)
                elif error_raised is not None:
                    self._settle_input(future, FAILED, error_raised)
                else:
                    self._settle_input(future, DONE, payload)

        def send() -> None:
            job.handle = self._client.send_job(msg, on_outcome)

        return send

    def _cancel_remote(self, future: SparrowFuture) -> None:
        """Cancel `future`'s task on the cluster (after it was sent: run_sync_soon keeps the order), or
        forget it if it still waits for inputs; and cancel the tasks waiting for it."""

        def cancel() -> None:
            if future._job is None:
                self._deps.drop(future)
                with self._lock:
                    self._pending.discard(future)
            else:
                future._job.handle.cancel_tasks([future._task])
            self._settle_input(future, CANCELLED_INPUT)

        with self._lock:
            try:
                self._token.run_sync_soon(cancel)
            except trio.RunFinishedError:
                pass

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; with `wait`, wait for submitted tasks' outcomes, then disconnect.

        `cancel_futures` cancels the tasks still pending, here and on the cluster.
        """
        with self._lock:
            already = self._shutdown
            self._shutdown = True
            pending = list(self._pending)
        if cancel_futures:
            for future in pending:
                future.cancel()
        if not already:
            if wait:
                concurrent.futures.wait(pending)
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        if wait:
            self._thread.join()


def _results_in_order(window: deque, top_up: Callable[[], None], deadline: float | None) -> Iterator:
    try:
        while window:
            future = window.popleft()
            result = future.result() if deadline is None else future.result(deadline - time.monotonic())
            top_up()
            yield result
    finally:
        for future in window:
            future.cancel()
