"""joblib on Sparrow: a joblib parallel backend, so `Parallel(...)` and every `n_jobs` of scikit-learn run on a
Sparrow cluster.

    import joblib
    import sparrow_runtime.joblib  # registers the backend "sparrow"

    with joblib.parallel_config(backend="sparrow"):      # the `sparrow local` of this host
        joblib.Parallel(n_jobs=-1)(joblib.delayed(f)(i) for i in range(10_000))
    with joblib.parallel_config(backend="sparrow", cluster=cluster):   # a LocalCluster, an executor, addresses
        GridSearchCV(model, grid, n_jobs=-1).fit(X, y)

joblib groups the calls of a Parallel into batches (its auto-batching makes a batch last 0.2-1 s) and keeps
about twice `n_jobs` batches in flight. Each batch is one Sparrow job, so the scheduler batch-samples its
tasks: a batch of k calls is min(k, n_jobs) tasks, each running a consecutive share of the calls. `n_jobs=-1`
is every slot of the cluster (the scheduler's status, asked at each Parallel call); a positive n_jobs is taken
as it is.

Large arguments travel once: an argument of a call whose size is known without pickling it (an array, bytes,
a str, a pandas object: client/scatter.py's `known_size`) over `scatter_over` bytes (default 64 KiB, the node
monitors' inline limit) is scattered to a node monitor at its first use in a Parallel call (uploaded from the
client, not through the scheduler), and every task that takes it carries its reference: a training set that
every fit of a grid search reads leaves the client once per Parallel call, not once per task.

Results and errors are joblib's: a call's exception is raised by `Parallel` as its own type (the remote
traceback as its `__cause__`); joblib then aborts the call, and the batches still queued or running on the
cluster are cancelled. A Parallel inside a task (nested parallelism) runs in that worker's threads (joblib's
default for a process backend's first level of nesting), never back on the cluster, whose slots are held by
the tasks that wait for it.

Outcomes arrive in the executor's trio thread; the backend hands them to a thread of its own, which fetches
results kept at node monitors and calls joblib's callback, from which joblib dispatches the next batch (a
dispatch may scatter, which waits for an upload: never in the trio thread).

Needs the optional extra `joblib` (`pip install 'sparrow-core[joblib]'`; `[sklearn]` adds scikit-learn).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from joblib import parallel_config, register_parallel_backend
from joblib._parallel_backends import AutoBatchingMixin, ParallelBackendBase

from .client.attach import executor_for
from .client.executor import SparrowExecutor, SparrowFuture
from .client.scatter import known_size
from .services.local_cluster import LocalCluster
from .wire import limits

_logger = logging.getLogger(__name__)

BACKEND_NAME = "sparrow"
"""The name the backend is registered under: `parallel_config(backend="sparrow")`."""

DEFAULT_SCATTER_OVER = limits.DEFAULT_INLINE_LIMIT
"""Bytes over which an argument is scattered to a node monitor once, instead of pickled into each task."""


class SparrowBackend(AutoBatchingMixin, ParallelBackendBase):
    """joblib's parallel backend on a Sparrow cluster (registered as "sparrow"; its keyword arguments are those
    of `parallel_config(backend="sparrow", ...)`).

    `cluster`: a SparrowExecutor (used as it is, left open), a LocalCluster (entered with its credentials),
    scheduler addresses (also as `schedulers=`, SparrowExecutor's name), or None for the `sparrow local` of this
    host; for the last three an executor is made
    at the first Parallel call with `executor_options` (secret, tls, user, priority, timeout, retries, ...) and
    shut down when the backend is dropped (at the end of its `parallel_config` block) or at exit.
    `scatter_over`: an argument of known size over this many bytes is scattered once per Parallel call (None:
    never). `batches`, `tasks` and `scattered` count what was sent.
    """

    default_n_jobs = -1  # the whole cluster, as joblib's Dask backend
    MIN_IDEAL_BATCH_DURATION = 0.2  # joblib's auto-batching: batches grow until one lasts this long,
    MAX_IDEAL_BATCH_DURATION = 1.0  # and shrink past this (as joblib's Dask backend)
    supports_retrieve_callback = True
    supports_inner_max_num_threads = False
    supports_sharedmem = False  # require="sharedmem" runs in the caller's threads instead (joblib's rule)
    uses_threads = False

    def __init__(
        self,
        cluster: SparrowExecutor | LocalCluster | Sequence[str] | str | None = None,
        *,
        schedulers: Sequence[str] | str | None = None,
        scatter_over: int | None = DEFAULT_SCATTER_OVER,
        nesting_level: int | None = None,
        inner_max_num_threads: int | None = None,
        **executor_options: Any,
    ) -> None:
        super().__init__(nesting_level=nesting_level, inner_max_num_threads=inner_max_num_threads)
        if scatter_over is not None and (isinstance(scatter_over, bool) or not isinstance(scatter_over, int)):
            raise ValueError(f"scatter_over must be an int of bytes or None, got {scatter_over!r}")
        if schedulers is not None:
            if cluster is not None:
                raise TypeError("give the cluster or its schedulers' addresses, not both")
            cluster = schedulers
        if isinstance(cluster, SparrowExecutor) and executor_options:
            raise TypeError(f"executor options {sorted(executor_options)} need a cluster, not an executor")
        self.scatter_over = scatter_over
        self._cluster = cluster
        self._options = executor_options
        self._executor: SparrowExecutor | None = None
        self._n_jobs = 1
        self._running: set[concurrent.futures.Future] = set()
        self._running_lock = threading.Lock()
        self._scattered: dict[int, tuple[object, SparrowFuture]] = {}  # id(argument) -> (it, its future), per call
        self._outcomes: _OutcomeThread | None = None
        self.batches = 0
        self.tasks = 0
        self.scattered = 0

    @property
    def executor(self) -> SparrowExecutor:
        """The executor this backend runs on (made at first use when it was not given)."""
        if self._executor is None:
            executor, owned = executor_for(self._cluster, self._options)
            if owned:
                weakref.finalize(self, executor.shutdown, wait=False)  # at the backend's end, or at exit
            self._executor = executor
        return self._executor

    def effective_n_jobs(self, n_jobs: int | None) -> int:
        """`n_jobs` when positive; -1 is every slot of the cluster, -2 all but one, and so on (at least 1)."""
        if n_jobs is None:
            n_jobs = self.default_n_jobs
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero int, got {n_jobs!r}")
        if n_jobs > 0:
            return n_jobs
        slots = sum(node.slots for node in self.executor.status().nodes)
        return max(slots + 1 + n_jobs, 1)

    def configure(self, n_jobs: int | None = 1, parallel: Any = None, **backend_args: Any) -> int:
        """(joblib, at each Parallel call.) The number of tasks a batch is spread over: effective_n_jobs."""
        self.parallel = parallel
        self._n_jobs = self.effective_n_jobs(n_jobs)
        return self._n_jobs

    def start_call(self) -> None:
        """(joblib, as a Parallel call starts.) A thread to settle its batches; no argument scattered yet."""
        self._scattered = {}
        self._outcomes = _OutcomeThread()

    def stop_call(self) -> None:
        """(joblib, as a Parallel call ends.) Its thread ends; the values it scattered are released."""
        if self._outcomes is not None:
            self._outcomes.stop()
            self._outcomes = None
        self._scattered = {}  # drops this call's futures: their values are released at the node monitors
        self.parallel = None  # the Parallel refers to this backend: no cycle keeps either alive

    def submit(self, func: Any, callback: Callable[[Any], None] | None = None) -> concurrent.futures.Future:
        """Send joblib's batch `func` (BatchedCalls: its `items` are (function, args, kwargs)) as one job of
        min(len(items), n_jobs) tasks; a future of the batch's results in order, given to `callback` when done.
        A batch that cannot be sent (a call that does not pickle, a failed upload) ends with that error the same
        way: joblib dispatches from the callbacks of earlier batches, where a raise would reach nobody."""
        try:
            parts = self._send(func.items)
        except Exception as exc:
            failed: concurrent.futures.Future = concurrent.futures.Future()
            failed.set_exception(exc)
            parts = [failed]
        if self._outcomes is None:  # a submit outside start_call/stop_call
            self._outcomes = _OutcomeThread()
        outcomes = self._outcomes
        batch = _Batch(parts, callback, self._finished)
        with self._running_lock:
            self._running.update(parts)
        for part in parts:
            part.add_done_callback(_when_done(batch, outcomes))
        return batch.future

    def _send(self, items: list[tuple[Callable, tuple, dict]]) -> list[concurrent.futures.Future]:
        """The calls `items` as one job of min(len(items), n_jobs) tasks (their large arguments scattered)."""
        nested = self.get_nested_backend()
        calls = [(fn, *self._scatter_large(args, kwargs)) for fn, args, kwargs in items]
        shares = _shares(len(calls), self._n_jobs)
        tasks: list[tuple[Callable, tuple, dict]] = [(run_calls, (calls[share], nested), {}) for share in shares]
        parts: list[concurrent.futures.Future] = list(self.executor.submit_many(tasks))  # scattered: references
        self.batches += 1
        self.tasks += len(parts)
        return parts

    def _scatter_large(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """`args` and `kwargs` with each value of known size over `scatter_over` bytes replaced by the future
        of its scattered copy (scattered at its first use in this Parallel call)."""
        over = self.scatter_over
        if over is None:
            return args, kwargs
        return tuple(self._scattered_or(v, over) for v in args), {
            k: self._scattered_or(v, over) for k, v in kwargs.items()
        }

    def _scattered_or(self, value: object, over: int) -> object:
        if type(value) in _SMALL:
            return value
        seen = self._scattered.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        size = known_size(value)
        if size is None or size <= over:
            return value
        future = self.executor.scatter(value)
        self._scattered[id(value)] = (value, future)  # holds the value: its id stays its own for the call
        self.scattered += 1
        return future

    def _finished(self, parts: list[concurrent.futures.Future]) -> None:
        with self._running_lock:
            self._running.difference_update(parts)

    def retrieve_result_callback(self, out: concurrent.futures.Future) -> list:
        """(joblib, in the callback of a batch.) The batch's results, or its exception raised."""
        return out.result()

    def abort_everything(self, ensure_ready: bool = True) -> None:
        """Cancel every batch still queued or running on the cluster (joblib aborts after a call raised)."""
        with self._running_lock:
            running, self._running = list(self._running), set()
        for future in running:
            future.cancel()

    def __reduce__(self) -> Any:
        raise TypeError("the sparrow joblib backend runs in the client; a task's own Parallel runs in its threads")


_SMALL = frozenset((type(None), bool, int, float, complex))  # never over any limit: not looked at


def _shares(n_calls: int, n_tasks: int) -> list[slice]:
    """`n_calls` split into min(n_calls, n_tasks) consecutive shares, their sizes within one of each other."""
    n = max(min(n_calls, n_tasks), 1)
    size, extra = divmod(n_calls, n)
    shares, start = [], 0
    for i in range(n):
        stop = start + size + (i < extra)
        shares.append(slice(start, stop))
        start = stop
    return shares


def run_calls(calls: list[tuple[Callable, tuple, dict]], nested: tuple[Any, int | None]) -> list:
    """A task: `calls` in order, under the nested backend joblib gives the batch (a Parallel inside a call runs
    in this worker)."""
    backend, n_jobs = nested
    with parallel_config(backend=backend, n_jobs=n_jobs):
        return [fn(*args, **kwargs) for fn, args, kwargs in calls]


class _Batch:
    """One joblib batch on the cluster: its tasks' futures (`parts`), and `future`, the batch's list of results
    (or its first exception), settled once every part is done."""

    def __init__(
        self,
        parts: list[concurrent.futures.Future],
        callback: Callable[[Any], None] | None,
        finished: Callable[[list[concurrent.futures.Future]], None],
    ) -> None:
        self.parts = parts
        self.callback = callback
        self.finished = finished
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self._left = len(parts)
        self._lock = threading.Lock()

    def part_done(self) -> bool:
        """Count one part done; True for the last."""
        with self._lock:
            self._left -= 1
            return self._left == 0

    def settle(self) -> None:
        """(In the outcome thread.) Gather the parts' results (fetching those kept at node monitors), settle
        `future`, and call joblib's callback."""
        self.finished(self.parts)
        try:
            results = [value for part in self.parts for value in part.result()]
        except BaseException as exc:  # a call's exception, a cancelled part, a task that got no result
            self.future.set_exception(exc)
        else:
            self.future.set_result(results)
        if self.callback is not None:
            self.callback(self.future)


def _when_done(batch: _Batch, outcomes: _OutcomeThread) -> Callable[[concurrent.futures.Future], None]:
    """A part's done callback (run in the executor's trio thread): the batch goes to `outcomes` at its last part.
    Fired, it lets go of both: a done future keeps its callbacks, and the client may keep a done task's future
    while the backend, its Parallel and their executor are long gone."""
    held: list = [batch, outcomes]

    def done(_: concurrent.futures.Future) -> None:
        mine, thread = held
        held.clear()
        if mine.part_done():
            thread.put(mine)

    return done


class _OutcomeThread:
    """A thread that settles finished batches one by one, off the executor's trio thread (a batch's results
    may have to be fetched, and joblib's callback dispatches the next batch, which may scatter)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="sparrow-joblib", daemon=True)
        self._thread.start()

    def put(self, batch: _Batch) -> None:
        self._queue.put(batch)

    def stop(self) -> None:
        """End the thread after what it was given (batches that finish later are dropped: joblib is done)."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            try:
                batch.settle()
            except Exception:  # joblib's callback failed: the next batches must still be settled
                _logger.exception("settling a joblib batch failed")


def register() -> None:
    """Register the backend with joblib as "sparrow" (done when this module is imported)."""
    register_parallel_backend(BACKEND_NAME, SparrowBackend)


register()
