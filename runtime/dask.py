"""Dask on Sparrow: a Dask scheduler that runs any Dask collection's graph on a Sparrow cluster.

    import dask
    from sparrow_runtime.dask import DaskScheduler

    with DaskScheduler(cluster) as sparrow:      # a LocalCluster, a SparrowExecutor, addresses, or None
        dask.compute(x, scheduler=sparrow)
    dask.compute(x, scheduler=sparrow_runtime.dask.get)  # the `sparrow local` of this host

The graph is walked by Dask's own `dask.local.get_async`, the engine of Dask's threaded,
multiprocessing and synchronous schedulers: it orders the tasks, keeps the ready ones, runs Dask's
callbacks (progress bars) and releases intermediate values once no task needs them. The tasks that
become ready together, when the outcomes of one pass of the client's trio loop are in, go to Sparrow
as one job, so the scheduler batch-samples them: a stage of a dask.array computation is one job.
`_Wave` finds where a wave ends from get_async's callbacks (`pretask` announces each task it is about
to submit, `posttask` follows each outcome it has handled); should a Dask release call them in
another order, calls go out sooner, in smaller jobs: slower, never stuck.

Values stay where they were made: a result over its node monitor's inline limit stays there and
get_async's cache holds its future, so a task that takes it travels with a reference and its node
monitor fetches the value; only the graph's final results are fetched by the client (docs/runtime.md,
"Dependencies and Dask"). Small values travel with their tasks, as before. A graph's own data (a DataNode:
the partitions `dd.from_pandas` embeds, an array given to `da.from_array`) pickled over `scatter_over` bytes
(the node monitors' default inline limit) is scattered before the graph runs (SparrowExecutor.scatter_many:
uploaded from the client straight to node monitors, spread over them), so it leaves the client once and
never passes through the scheduler; the tasks that take it run where it is. Results and exceptions
are as with Dask's local schedulers: a task's exception is raised by `dask.compute` as its original type with the remote
traceback (RemoteTraceback) as its `__cause__`; the tasks of the graph still running are cancelled.
Needs the optional extra `dask` (`pip install 'sparrow-core[dask]'`).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import trio
from dask._task_spec import DataNode, convert_legacy_graph
from dask.callbacks import Callback, local_callbacks, normalize_callback
from dask.local import batch_execute_tasks, get_async

from .client.attach import executor_for
from .client.executor import SparrowExecutor, SparrowFuture
from .client.job import JobOptions
from .client.scatter import Pickled, pickle_value
from .client.tick_batch import TickBatch
from .dask_annotations import graph_annotations, task_options
from .services.local_cluster import LocalCluster
from .wire import limits

DEFAULT_MAX_IN_FLIGHT = 10_000
"""Tasks of one graph on the cluster at once (get_async's num_workers)."""

DEFAULT_SCATTER_OVER = limits.DEFAULT_INLINE_LIMIT
"""Bytes (pickled) over which a graph's data is scattered to node monitors (the node monitors' default inline limit)."""


class DaskScheduler:
    """A Dask scheduler function (`dask.compute(x, scheduler=DaskScheduler(...))`) on a Sparrow cluster.

    `cluster`: a SparrowExecutor (used as it is), a LocalCluster (entered with its credentials: its TLS
    client or its secret, unless others are given), scheduler addresses, or None for the `sparrow local`
    of this host; for the last three an executor is made with `executor_options`
    (secret, user, priority, timeout, retries, sampling="per_task" for per-task sampling, ...) and
    closed by `close()` / the `with` block.
    `max_in_flight`: at most this many tasks of one graph are on the cluster at once (also
    `dask.compute(..., num_workers=N)`). `scatter_over`: a graph's data (DataNode) pickled over this many
    bytes is scattered to node monitors before the graph runs (None: never). `waves` and `tasks` count what
    was sent, over all graphs, and `scattered` the values scattered.
    """

    def __init__(
        self,
        cluster: SparrowExecutor | LocalCluster | Sequence[str] | str | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        scatter_over: int | None = DEFAULT_SCATTER_OVER,
        **executor_options: Any,
    ) -> None:
        check_max_in_flight(max_in_flight)
        if scatter_over is not None and (isinstance(scatter_over, bool) or not isinstance(scatter_over, int)):
            raise ValueError(f"scatter_over must be an int of bytes or None, got {scatter_over!r}")
        self.scatter_over = scatter_over
        self.executor, self._owned = executor_for(cluster, executor_options)
        self.max_in_flight = max_in_flight
        self.waves = 0
        self.tasks = 0
        self.scattered = 0
        self._lock = threading.Lock()

    def __call__(
        self,
        dsk: Mapping,
        keys: Any,
        *,
        num_workers: int | None = None,
        callbacks: Iterable[Callback | tuple] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Compute `keys` of the graph `dsk` (Dask calls this). Other keyword arguments go to get_async."""
        in_flight = self.max_in_flight if num_workers is None else check_max_in_flight(num_workers, "num_workers")
        options = task_options(graph_annotations(dsk), self.executor.priority)
        if self.scatter_over is not None:
            dsk = self._scatter_data(dsk, self.scatter_over)
        wave = _Wave(self, in_flight, options)
        with local_callbacks(callbacks) as active:  # Dask's global callbacks (a ProgressBar), as its own schedulers
            ours = (None, None, wave.announce, wave.processed, None)
            kwargs.pop("chunksize", None)  # one call per task: a wave is counted in tasks
            try:
                result = get_async(
                    wave.submit,
                    in_flight,
                    dsk,
                    keys,
                    callbacks=[ours, *map(normalize_callback, active)],
                    chunksize=1,
                    **kwargs,
                )
                return _fetched(result)
            finally:
                wave.cancel_running()

    def _scatter_data(self, dsk: Any, over: int) -> Mapping:
        """`dsk` with each DataNode whose value pickles to over `over` bytes scattered: its value is
        then the future of the scattered one (get_async puts it in its cache; dependents take it as any
        value kept at a node monitor). The graph as it was if there is none."""
        if not isinstance(dsk, Mapping):  # an expression (dask.dataframe's): as get_async takes it
            dsk = dsk.__dask_graph__()
        dsk = convert_legacy_graph(dsk)
        keys, values = [], []
        for key, node in dsk.items():
            if type(node) is DataNode and type(node.value) not in _SMALL:
                keys.append(key)
                values.append(node.value)
        if not keys:
            return dsk
        sized = [_sized(value) for value in values]
        big = [i for i, (size, _) in enumerate(sized) if size > over]
        if not big:
            return dsk
        futures = self.executor.scatter_many([sized[i][1] for i in big])
        with self._lock:
            self.scattered += len(futures)
        dsk = dict(dsk)
        for i, future in zip(big, futures, strict=True):
            dsk[keys[i]] = DataNode(keys[i], future)
        return dsk

    def _count(self, tasks: int) -> None:
        with self._lock:
            self.waves += 1
            self.tasks += tasks

    def close(self) -> None:
        """Shut the executor down if this scheduler made it."""
        if self._owned:
            self.executor.shutdown()

    def __enter__(self) -> DaskScheduler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Wave:
    """One graph's traffic: sends what get_async submits while it handles the outcomes of one pass of
    the client's trio loop as one job, and hands it those outcomes together.

    get_async takes one outcome at a time from its queue and fires what became ready after each, so
    a firing is not a wave. Here outcomes are handed over once per trio pass (`_deliver`), and the
    calls submitted are held until get_async has handled every outcome handed over and is about to
    wait for more: at the end of a firing (the `pretask` announcements are all submitted) once no
    outcome is left in its queue, or at the last outcome's `posttask` if that one fires nothing.
    """

    def __init__(self, scheduler: DaskScheduler, in_flight: int, options: Mapping[Hashable, JobOptions]) -> None:
        self._scheduler = scheduler
        self._options = options  # the job options of the annotated keys
        self._in_flight = in_flight  # get_async's num_workers: it fires nothing while this many run
        self._owed = 0  # tasks announced (pretask) and not submitted yet
        self._calls: list[tuple] = []
        self._futures: list[concurrent.futures.Future] = []
        self._running: set[concurrent.futures.Future] = set()  # sent and not done: cancelled if the graph fails
        self._delivered = 0  # outcomes handed to get_async (written in the trio thread only)
        self._processed = 0  # outcomes get_async has handled (posttask)
        self._outcomes = TickBatch(self._deliver)

    def announce(self, key: Hashable, dsk: Mapping, state: dict) -> None:
        """get_async's pretask callback: a task of the current firing is about to be submitted."""
        self._owed += 1

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """get_async's submit: a future now; the call goes out with the rest of its wave. A task of the
        graph (one `execute_task` in a batch) goes as the call of the task itself on its inputs, so that
        an input kept at a node monitor (a future in get_async's cache) travels as a reference."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if fn is batch_execute_tasks and len(args[0]) == 1 and not kwargs:
            key, task_info, dumps, loads, _, _ = args[0][0]
            task, data = loads(task_info)
            self._calls.append((_run_task, (task, data), {}, (key, dumps), self._options.get(key)))
        else:
            self._calls.append((fn, args, kwargs, None, None))
        self._futures.append(future)
        self._owed -= len(args[0]) if fn is batch_execute_tasks else 1
        if self._owed <= 0:
            self._owed = 0
            if self._processed == self._delivered or not self._processed:  # none: posttask is not called
                self._send()
        return future

    def processed(self, key: Hashable, result: object, dsk: Mapping, state: dict, worker_id: object) -> None:
        """get_async's posttask callback: it has handled one outcome."""
        self._processed += 1
        if self._calls and self._processed == self._delivered:
            fires = state["ready"] and len(state["running"]) < self._in_flight
            if not fires:  # get_async waits for its queue next: what it submitted must go now
                self._send()

    def _send(self) -> None:
        calls, futures = self._calls, self._futures
        self._calls, self._futures = [], []
        # one job per set of options (one without annotations); a task whose inputs are kept at node monitors
        # goes with their references (no fetch)
        executor = self._scheduler.executor
        if not self._options:
            sent = executor.submit_many([call[:3] for call in calls])
        else:
            groups: dict[JobOptions | None, list[int]] = {}
            for i, call in enumerate(calls):
                groups.setdefault(call[4], []).append(i)
            by_call: dict[int, SparrowFuture] = {}
            for options, members in groups.items():
                by_call.update(zip(members, executor.submit_many([calls[i][:3] for i in members], options)))
            sent = [by_call[i] for i in range(len(calls))]
        self._scheduler._count(len(sent))
        for mine, theirs, call in zip(futures, sent, calls, strict=True):
            self._running.add(theirs)
            theirs.add_done_callback(partial(self._settled, mine, call[3]))

    def _settled(self, mine: concurrent.futures.Future, task: tuple | None, theirs: concurrent.futures.Future) -> None:
        self._running.discard(theirs)
        if trio.lowlevel.in_trio_run():  # the executor's trio thread, handling outcomes
            self._outcomes.add((mine, task, theirs))
        else:  # done before its callback was added
            self._deliver([(mine, task, theirs)])

    def _deliver(self, settled: list[tuple]) -> None:
        self._delivered += len(settled)  # first: get_async may handle the first before the last is set
        for mine, task, theirs in settled:
            if theirs.cancelled():
                mine.cancel()
            elif theirs.exception() is not None:
                mine.set_exception(theirs.exception())
            elif task is None:
                mine.set_result(theirs.result())
            else:  # as execute_task answers; a value kept at its node monitor stays there, as its future
                key, dumps = task
                value = theirs if theirs.kept else theirs.result()
                mine.set_result([(key, dumps((value, None)), False)])

    def cancel_running(self) -> None:
        """Cancel the graph's tasks still on the cluster (get_async returned or raised)."""
        for future in list(self._running):
            future.cancel()


_SMALL = frozenset((type(None), bool, int, float, complex))  # never over any limit: not pickled to see


def _sized(value: object) -> tuple[int, object]:
    """Roughly the bytes `value` pickles to, and what to scatter for it: for bytes and arrays their buffer's size
    and the value (not pickled to see), else the pickle's size and the pickle (Pickled: not pickled again)."""
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        return len(value), value
    nbytes = getattr(value, "nbytes", None)  # a numpy array
    if type(nbytes) is int and type(value).__module__ == "numpy":
        return nbytes, value
    pickled = pickle_value(value)
    return len(pickled), Pickled(pickled)


def _run_task(task: Callable[[dict], Any], data: dict) -> Any:
    """A task of the graph, run on the cluster on its inputs' values."""
    return task(data)


def _fetched(result: Any) -> Any:
    """get_async's result with every value still kept at a node monitor fetched (nested lists and tuples)."""
    if isinstance(result, SparrowFuture):
        return result.result()
    if type(result) in (list, tuple):
        return type(result)(_fetched(r) for r in result)
    return result


def check_max_in_flight(value: int, name: str = "max_in_flight") -> int:
    """`value` when it is an int >= 1; ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


_local: DaskScheduler | None = None
_local_lock = threading.Lock()


def get(dsk: Mapping, keys: Any, **kwargs: Any) -> Any:
    """A Dask scheduler function on the `sparrow local` of this host, connected at first use:
    `dask.compute(x, scheduler=get)` or `dask.config.set(scheduler=get)`. Raises ConnectionLost if
    none runs here."""
    global _local
    with _local_lock:
        if _local is None:
            _local = DaskScheduler()
            atexit.register(_local.close)
    return _local(dsk, keys, **kwargs)
