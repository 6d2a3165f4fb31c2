"""SparrowExecutor: a `concurrent.futures.Executor` backed by a Sparrow cluster.

A background thread runs trio with one Client (failover, heartbeats, retries and dependencies are
the client logic's: logic.py, core.py; the thread and what is handed over to it: executor_loop.py).
`submit` makes a job of one task, and the `submit`s that reach the trio thread together (those made
while it was busy: one hand-over) go to the scheduler as one job, batch-sampled together in one
frame; `map` sends jobs of up to `chunksize` tasks (one per item), so the scheduler batch-samples
probes for each chunk, and consumes its iterables lazily with at most `buffersize` tasks submitted
and not yet yielded (as Python 3.14's `Executor.map`), so a map over millions of items runs in flat
memory. Tasks are pickled in the caller's thread; the hand-over to the trio thread does not block
(one `run_sync_soon` for what is handed over together).

`submit` takes futures of this executor anywhere in its arguments (nested in lists, tuples, sets and
dict values, as Dask's `Client.submit`): the task is sent once they are done, with their values, and
the tasks that become ready in one pass of the trio loop (the dependents of a task that just finished)
go as one job; if an input fails, the task does not run and fails with DependencyFailed; if an input
is cancelled, so is the task (logic.py, docs/runtime-dask.md "Dependencies and Dask").

A future is running once the scheduler has handed its task out (every job asks to be told:
SubmitJob.report_started, TaskStarted, sent for a task still running a result-batching period after
it was handed out); `Future.cancel()` is then False, as the standard's. Before, it is True and the
scheduler never launches the task (or, if the news of its start was still on its way, discards its
result). `shutdown(cancel_futures=True)` has the scheduler cancel every task it has
not handed out (CancelJob.pending_only), and the started ones run to their results. As with the standard
executors, the tasks submitted before `shutdown` run to their outcomes, with `wait=False` too, also
for an executor dropped without `shutdown` and at the interpreter's exit (submitting from an atexit
hook raises RuntimeError); then the executor disconnects, which ends every task still without an
outcome as cancelled, within a second whatever its client is doing (reconnecting included).

Error handling: the constructor raises ConnectionLost if no scheduler accepts the connection (or,
without addresses, if no `sparrow local` runs here). An exception raised by a task is raised by
`Future.result()` (and by `map`'s iterator) with the remote traceback as `__cause__`; a task that
got no result of its own raises TaskFailed (TaskTimeout past `timeout`). Submitting after `shutdown`
raises RuntimeError, like the standard executors.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import itertools
import logging
import os
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures._base import CANCELLED as FUTURE_CANCELLED
from concurrent.futures._base import FINISHED as FUTURE_FINISHED
from concurrent.futures._base import PENDING as FUTURE_PENDING
from concurrent.futures._base import RUNNING as FUTURE_RUNNING
from functools import partial
from typing import Any, NoReturn

import cloudpickle
import msgspec
import trio

from .. import views
from ..data.code_archive import Packed
from ..data.dependent import CodeRef, with_code
from ..wire.address import Address
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.link_config import DEFAULT_HANDSHAKE_TIMEOUT
from ..wire.messages import CANCELLED, Constraint, StatusReply, TaskRecord
from ..wire.task_codec import TaskPacker, pack_task
from ..wire.tls import TLS
from .core import DEFAULT_SCHEDULER_TIMEOUT, Client
from .executor_loop import ExecutorLoop
from .job import (
    DEFAULT_RETRIES,
    Job,
    JobOptions,
    build_submit,
    check_retries,
    job_size_problem,
    oversize_problem,
    split_jobs,
)
from .logic import Held
from .output import OutputCallback
from .output import text as output_text
from .scatter import prepare
from .task_inputs import Inputs, find_inputs, pack_template

logger = logging.getLogger(__name__)

DEFAULT_CHUNKSIZE = 256
DEFAULT_BUFFERSIZE = 8 * DEFAULT_CHUNKSIZE  # map's tasks submitted and not yet yielded


_KEPT = object()  # a future's result while its value is still at its node monitor only


_RLock: Any = getattr(_thread, "RLock", threading.RLock)  # the C lock threading.RLock() makes, without its Python frame


class _Condition(threading.Condition):
    """threading.Condition over an RLock of its own that looks the lock's methods up when called: the standard
    one binds five of them per instance, five objects per future that the garbage collector scans while the
    future is pending (a loop of submits holds thousands), and makes its deque of waiters at once (made here
    by the first wait: most futures are never waited on). The methods a Condition and concurrent.futures call
    (acquire, release, and wait's _release_save, _acquire_restore, _is_owned) are the lock's own."""

    def __init__(self) -> None:  # not Condition.__init__: it binds the lock's methods on the instance
        self._lock = _RLock()
        self._waiters: deque | tuple = ()  # a deque from the first wait (notify reads an empty tuple as well)

    def wait(self, timeout: float | None = None) -> bool:
        if isinstance(self._waiters, tuple):  # under the lock (Condition.wait checks it owns it before it appends)
            self._waiters = deque()
        return super().wait(timeout)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def _release_save(self) -> Any:
        return self._lock._release_save()

    def _acquire_restore(self, state: Any) -> None:
        self._lock._acquire_restore(state)

    def _is_owned(self) -> bool:
        return self._lock._is_owned()


class SparrowFuture(concurrent.futures.Future):
    """A Future whose `cancel()` also cancels its task on the cluster (and the tasks that take its result),
    and whose `result()` fetches a value kept at its node monitor (once: the value is then the future's).
    Dropping it releases that value (once no task waits for it)."""

    def __init__(self, executor: SparrowExecutor, job: Job, task: int) -> None:
        # Future.__init__'s fields (tests/runtime/client/test_executor_contract.py compares them with the running
        # Python's), with the lighter condition
        self._condition = _Condition()
        self._state = FUTURE_PENDING
        self._result = None
        self._exception = None
        self._waiters: list = []
        self._done_callbacks: list | tuple = ()  # a list from the first add_done_callback: most futures have none
        self._executor = executor
        self._job = job  # the client logic's record of its job
        self._task = task

    def add_done_callback(self, fn: Callable[[concurrent.futures.Future], object]) -> None:
        with self._condition:
            if isinstance(self._done_callbacks, tuple):
                self._done_callbacks = []
        super().add_done_callback(fn)

    def result(self, timeout: float | None = None) -> Any:
        value = super().result(timeout)
        if value is _KEPT:
            value = self._executor._fetch(self)
            with self._condition:
                if self._result is _KEPT:
                    self._result = value
                value = self._result
        return value

    def output(self, timeout: float | None = None, stream: str | None = None) -> str:
        """What the task wrote to `stream` ("stdout", "stderr"; None: its stdout, then its stderr) in its last
        attempt, as far as its node monitor's caps let through ("" if nothing), once it is done: waits up to
        `timeout` seconds as `result` does (TimeoutError), and is "" for a future cancelled before it ran."""
        if not concurrent.futures.wait([self], timeout).done:
            raise TimeoutError(f"the task is not done after {timeout} s")
        return output_text(self._job, self._task, stream)

    @property
    def kept(self) -> bool:
        """Whether its value is kept at its node monitor and not fetched here (yet)."""
        return self.done() and self._result is _KEPT

    def __del__(self) -> None:
        outcome = self._job.outcomes[self._task]
        if outcome is None or outcome.ref is not None:
            self._executor._client.dropped(self._job, self._task)

    def running(self) -> bool:
        """Whether its task runs: the scheduler handed it out (TaskStarted) and it has no outcome yet. The
        future's own state stays pending until then: the client's thread marks the task started without
        taking the future's lock (Job.started), once per task on the hot path."""
        started = self._job.started
        return started is not None and started[self._task] == 1 and self._state == FUTURE_PENDING

    def cancel(self, force: bool = False) -> bool:
        """The standard's cancel (False once the task runs); `force` also stops a running task (its worker
        is killed where the node monitor can, else its result is dropped) and cancels its future."""
        if not force and self.running():
            return False
        if not super().cancel():
            return False
        if self._notify_cancelled():
            self._executor._cancel_remote(self, force)
        return True

    def _notify_cancelled(self) -> bool:
        """(Cancelled.) Tell the waiters of concurrent.futures.wait and as_completed, once: whether this
        call did (a future is cancelled twice, or by its user and its client at once, without error)."""
        with self._condition:
            if self._state != FUTURE_CANCELLED:
                return False
            self.set_running_or_notify_cancel()
            return True

    def _finish(self, value: Any, error: BaseException | None) -> None:
        """(The trio thread.) `set_result(value)`, or `set_exception(error)`, in one hold of the lock, and nothing
        if the future was cancelled meanwhile (in the caller's thread). The condition is notified only if a thread
        waits on it: map's window holds hundreds of futures that nobody waits for yet."""
        condition = self._condition
        # the condition's own lock, without the condition's Python-level __enter__ and __exit__
        with condition._lock:  # type: ignore[attr-defined]
            if self._state != FUTURE_PENDING and self._state != FUTURE_RUNNING:
                return
            if error is None:
                self._result = value
                self._state = FUTURE_FINISHED
                for waiter in self._waiters:  # those of concurrent.futures.wait and as_completed
                    waiter.add_result(self)
            else:
                self._exception = error
                self._state = FUTURE_FINISHED
                for waiter in self._waiters:
                    waiter.add_exception(self)
            if condition._waiters:  # type: ignore[attr-defined]
                condition.notify_all()
        if self._done_callbacks:
            self._invoke_callbacks()  # type: ignore[attr-defined]

    def _take_result(self, timeout: float | None) -> Any:
        """`result(timeout)` for a future nobody else sees (map's): its value is then forgotten here, so
        the caller's dropping it frees it; the task is cancelled if it has no outcome by then."""
        # a value here already (most of a map's): taken in one hold of the lock
        with self._condition._lock:  # type: ignore[attr-defined]
            if self._state == FUTURE_FINISHED and self._exception is None and self._result is not _KEPT:
                value, self._result = self._result, None
                return value
        try:
            value = self.result(timeout)
        except BaseException:
            self.cancel()  # a wait that timed out or was interrupted cancels the task (nothing if it is done)
            raise
        self._result = None
        return value

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a future is an input only as an argument of SparrowExecutor.submit (also nested in lists, tuples, "
            "sets and dict values), not inside other objects"
        )


class SparrowExecutor(concurrent.futures.Executor):
    """Run callables on the cluster behind `schedulers` (addresses; None: the `sparrow local` of this
    host) as `user` (under TLS, by default the user of the client certificate `tls`; see Client for
    the credentials). `retries`, `retry_exceptions`, `scheduler_timeout`, `handshake_timeout` and
    `max_frame` (the largest frame, so the largest task with its inputs, and result) are the Client's;
    `timeout` (seconds, optional) is each task's time limit. `sampling` is every job's probe
    placement, "batch" (the default) or "per_task" (Client.submit_job). `resources` is what each task
    takes besides its slot, like {"gpu": 1} (docs/resources.md; None: a slot alone); `map` and
    `submit_many` (JobOptions) take their own. `py_modules` and `working_dir`: code shipped with every job, put
    first on the workers' `sys.path` (Client; docs/code-shipping.md): a file changed is shipped again with the
    jobs submitted from about a second later. `output` says what to do with what the tasks print (Client: "print"
    with a prefix, the default; "keep"; or a callable); `SparrowFuture.output()` gives a task's.
    `connect_timeout` is the old name of `handshake_timeout`
    (deprecated).

    Where it departs from the standard executors, and why (docs/futures.md): no `max_workers`,
    `mp_context` or `initializer` (the cluster's node monitors decide); a task is running from when the
    scheduler hands it out (TaskStarted), which the executor hears a result-batching period and a trip later
    (a `cancel()` in between is True, and the task's result is dropped); an argument that cannot
    be pickled raises TypeError from `submit` (tasks are pickled in the caller's thread, so the frame
    limit is checked before anything is sent); a worker that dies fails its task alone (TaskFailed,
    after `retries`), never a BrokenProcessPool that fails every task."""

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
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        connect_timeout: float | None = None,
        sampling: str = "batch",
        resources: str | Mapping[str, object] | None = None,
        py_modules: Iterable[object] | None = None,
        working_dir: str | os.PathLike | None = None,
        output: str | OutputCallback = "print",
    ) -> None:
        if not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {chunksize!r}")
        if connect_timeout is not None:
            warnings.warn(
                "SparrowExecutor(connect_timeout=...) is deprecated: use handshake_timeout", DeprecationWarning, 2
            )
            handshake_timeout = connect_timeout
        self._client = Client(
            schedulers,
            secret=secret,
            secret_file=secret_file,
            tls=tls,
            handshake_timeout=handshake_timeout,
            retries=retries,
            retry_exceptions=retry_exceptions,
            scheduler_timeout=scheduler_timeout,
            max_frame=max_frame,
            py_modules=py_modules,
            working_dir=working_dir,
            output=output,
        )
        self._code_ref: tuple[Packed, CodeRef, float] | None = None  # the archive last shipped, its ref, when
        # checked now, not at each submit: the settings of every job it sends
        self.resources = resources  # as given: each job's settings put it in units (build_submit)
        self._settings = build_submit(
            [b""], user, priority, None, None, timeout=timeout, sampling=sampling, resources=resources
        )
        self._settings = msgspec.structs.replace(self._settings, report_started=True)  # running(), cancel()
        self.user = user
        self.priority = priority
        self.sampling = sampling
        self.chunksize = chunksize
        self.timeout = timeout
        self._loop = ExecutorLoop(self._client)
        self._loop.start()
        # dropped without shutdown(): the loop (which holds nothing of the executor) ends once its tasks have
        weakref.finalize(self, self._loop.close)

    @property
    def client(self) -> Client:
        """The Client behind this executor (its `failovers`, `connected_to`)."""
        return self._client

    def status(self) -> StatusReply:
        """What the scheduler knows (Client.status: its node monitors with their slots, its jobs), asked from
        the caller's thread. Raises as Client.status; RuntimeError from the executor's own callbacks."""
        if trio.lowlevel.in_trio_run():
            raise RuntimeError("status waits for the scheduler's answer: call it outside the executor's callbacks")
        return trio.from_thread.run(self._client.status, trio_token=self._loop.token)

    def tasks(
        self, *, user: str = "", failed: bool = False, job: int | None = None, since: float = 0.0, limit: int = 1000
    ) -> list[TaskRecord]:
        """How recent tasks ended, newest first (Client.tasks: the same filters and who may see what), asked
        from the caller's thread. Raises as Client.tasks; RuntimeError from the executor's own callbacks."""
        if trio.lowlevel.in_trio_run():
            raise RuntimeError("tasks waits for the scheduler's answer: call it outside the executor's callbacks")
        ask = partial(self._client.tasks, user=user, failed=failed, job=job, since=since, limit=limit)
        return trio.from_thread.run(ask, trio_token=self._loop.token)

    def __repr__(self) -> str:
        return views.executor_repr(self)

    def _repr_html_(self) -> str:
        return views.executor_html(self)

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        code = None if self._client.code is None else self._code()
        inputs = find_inputs(args, kwargs, _is_future)
        if inputs is not None:
            return self._submit_dependent(fn, inputs, code)
        payload = pack_task(fn, args, kwargs)
        if code is not None:
            payload = with_code(payload, code)
        problem = oversize_problem(len(payload), self._client.max_frame)
        if problem is not None:
            raise ValueError(problem)
        job = self._job([payload], coalesce=True, code=code)
        future = job.owner[0]  # before the hand-over: the job lets go of it once settled
        self._hand_over([job], partial(self._client.add_job, job))
        return future

    def submit_many(
        self, calls: Iterable[tuple[Callable, tuple, dict]], options: JobOptions | None = None
    ) -> list[SparrowFuture]:
        """Submit calls `(fn, args, kwargs)` together as one job (as few jobs as the frame limit allows),
        so the scheduler batch-samples them together; a future per call. A call may take futures of this
        executor as inputs, as with `submit`: it waits for them, and goes with the job's other calls when
        they are done already (values kept at node monitors: references). `options`: the job's priority,
        node monitors, preference and retries where they differ from the executor's (JobOptions). Raises
        ValueError before anything is sent if one call is over the frame limit or an option is invalid."""
        max_frame = self._client.max_frame
        code = None if self._client.code is None else self._code()
        payloads: list[bytes] = []
        sizes: list[int] = []
        held: Held = {}
        packer: TaskPacker | None = None  # the last callable's (decided once per call of submit_many)
        for task, (fn, args, kwargs) in enumerate(calls):
            inputs = find_inputs(args, kwargs, _is_future)
            if inputs is None:
                if packer is None or packer.fn is not fn:
                    packer = TaskPacker(fn)
                payload = packer.pack(args, kwargs)
                if code is not None:
                    payload = with_code(payload, code)
                problem = oversize_problem(len(payload), max_frame)
                if problem is not None:
                    raise ValueError(problem)
                sizes.append(len(payload))
            else:
                held[task] = self._dependent_call(fn, inputs)
                payload = b""  # made when its inputs are done (the client logic's)
                sizes.append(len(held[task][0]))
            payloads.append(payload)
        groups = split_jobs(sizes, max_frame)
        jobs = [self._job(payloads[g.start : g.stop], options=options, code=code) for g in groups]
        adds = [
            partial(self._client.add_job, job, {t - g.start: held[t] for t in g if t in held} if held else None)
            for job, g in zip(jobs, groups)
        ]
        futures = [future for job in jobs for future in job.owner]
        self._hand_over(jobs, *adds)
        return futures

    def scatter(self, value: object, *, keep: bool = True) -> SparrowFuture:
        """Put `value` on a node monitor, uploaded from here (not through the scheduler): a done future whose
        value is kept there, as a task's result may be (Client.scatter: passed to `submit` as an input, its
        tasks read it there; `result()` fetches it; dropping the future releases it). Blocks until it is
        kept. Raises UploadFailed naming the node monitor and why."""
        return self.scatter_many([value], keep=keep)[0]

    def scatter_many(self, values: Iterable, *, keep: bool = True) -> list[SparrowFuture]:
        """`scatter` for several values at once (uploaded together, spread over the node monitors)."""
        if trio.lowlevel.in_trio_run():
            raise RuntimeError("scatter blocks until the values are kept: call it outside the executor's callbacks")
        jobs, data = prepare(values, self._job, keep)
        with self._loop.lock:
            if self._loop.closed:
                raise RuntimeError("cannot scatter after shutdown")
        futures = [job.owner[0] for job in jobs]
        trio.from_thread.run(self._client._scatter.upload, jobs, data, trio_token=self._loop.token)
        for future in futures:
            error = future.exception()  # done: settled by the upload
            if error is not None:
                raise error
        return futures

    def _code(self) -> CodeRef:
        """The reference this executor's next job carries to its code (Client.job_code, asked of the trio thread
        when the archive changed or a second passed). Raises CodeError, UploadFailed; RuntimeError from the
        executor's own callbacks (an upload is waited for)."""
        source = self._client.code
        assert source is not None  # the callers checked
        packed = source.current()
        last = self._code_ref
        now = time.monotonic()
        if last is not None and last[0] is packed and now - last[2] < source.recheck:
            return last[1]
        if trio.lowlevel.in_trio_run():
            raise RuntimeError("a job that ships code may wait for its upload: submit outside the executor's callbacks")
        ref = trio.from_thread.run(self._client.job_code, trio_token=self._loop.token)
        self._code_ref = (packed, ref, now)
        return ref

    def _submit_dependent(self, fn: Callable, inputs: Inputs, code: CodeRef | None = None) -> SparrowFuture:
        """A task that takes futures' results: held (in the trio thread) until they are done."""
        call = self._dependent_call(fn, inputs)
        job = self._job([b""], coalesce=True, code=code)
        future = job.owner[0]
        self._hand_over([job], partial(self._client.add_job, job, {0: call}))
        return future

    def _dependent_call(self, fn: Callable, inputs: Inputs) -> tuple[bytes, Inputs]:
        """The call of a task that takes futures' results as the client logic holds it: its template, and its
        inputs as (job, task) keys. ValueError for a future of another executor, or for a call over the frame
        limit with the inputs' values known now."""
        known = 0  # the size of the inputs' values known now
        for future in inputs.keys:
            if future._executor is not self:
                raise ValueError(f"{future!r} is a future of another executor")
            outcome = future._job.outcomes[future._task]
            if outcome is not None and outcome.ok:
                known += len(outcome.payload)
        template = pack_template(fn, inputs)
        problem = oversize_problem(len(template) + known, self._client.max_frame)
        if problem is not None:
            raise ValueError(problem)
        inputs.keys = [(future._job, future._task) for future in inputs.keys]
        return template, inputs

    def _job(
        self,
        payloads: list[bytes],
        coalesce: bool = False,
        options: JobOptions | None = None,
        code: CodeRef | None = None,
    ) -> Job:
        """A job of `payloads` with this executor's settings (but `options`), and a future per task (its `owner`);
        `code`: the code its tasks run in (their payloads name it: the job keeps it for those held)."""
        client = self._client
        settings, retries, retry_exceptions = self._settings, client.retries, client.retry_exceptions
        if options is not None:
            settings = build_submit(
                payloads,
                self.user,
                self.priority if options.priority is None else options.priority,
                None,
                Constraint(options.node_monitors) if options.node_monitors else None,
                client.max_frame,
                self.timeout,
                [options.prefer] * len(payloads) if options.prefer else None,
                self.sampling,
                self.resources if options.resources is None else options.request(),
            )
            # checked with its tasks (they are the job's); told when each starts, as every job of the executor
            settings = msgspec.structs.replace(settings, tasks=[], report_started=True)
            retries = retries if options.retries is None else check_retries(options.retries)
            retry_exceptions = retry_exceptions if options.retry_exceptions is None else options.retry_exceptions
        job = Job(
            settings,
            payloads,
            retries=retries,
            retry_exceptions=retry_exceptions,
            coalesce=coalesce,
            listener=self._on_outcomes,
        )
        job.code = code
        job.owner = [SparrowFuture(self, job, task) for task in range(len(payloads))]
        return job

    def _hand_over(self, jobs: list[Job], *calls: Callable[[], None]) -> None:
        """Have the trio thread make `calls` (after those handed over before), for `jobs`' futures: one
        wake-up of the trio thread for everything handed over until it runs. RuntimeError after shutdown."""
        self._loop.hand_over(jobs, calls)

    def _on_outcomes(self, events: list[tuple[Job, int]]) -> None:
        """In the trio thread: these tasks have their outcomes; settle their futures."""
        futures = [job.owner[task] for job, task in events]
        self._loop.settled(futures)
        for (job, task), future in zip(events, futures):
            self._settle(job, task, future)
            # the job lets go of a settled future: a future and its job hold each other until then, and left so
            # every finished task was cyclic garbage that only a full collection freed, running each future's
            # finalizer there (most of the client's time in a loop of submits, and its memory meanwhile)
            job.owner[task] = None

    @staticmethod
    def _settle(job: Job, task: int, future: SparrowFuture) -> None:
        """Give `future` task `task`'s outcome: its value, its exception, or cancelled."""
        if future._state != FUTURE_PENDING:  # cancelled in the caller's thread (read without the lock: _finish checks)
            return
        outcome = job.outcomes[task]
        # not SparrowFuture.cancel: the logic knows. A running future cannot be cancelled: it raises TaskCancelled
        if outcome.failure == CANCELLED and concurrent.futures.Future.cancel(future):
            future._notify_cancelled()
            return
        try:
            if outcome.ok:  # its value here (Job.value's, without its two calls), or kept at its node monitor
                value = _KEPT if outcome.ref is not None else cloudpickle.loads(outcome.payload)
            else:
                value = job.value(task)  # raises the exception its outcome stands for
        except BaseException as exc:
            future._finish(None, exc)
        else:
            future._finish(value, None)

    def map(
        self,
        fn: Callable,
        *iterables: Iterable,
        timeout: float | None = None,
        chunksize: int | None = None,
        buffersize: int | None = DEFAULT_BUFFERSIZE,
        resources: str | Mapping[str, object] | None = None,
    ) -> Iterator:
        """Like Executor.map, but each chunk of up to `chunksize` items (default: the executor's) is
        one job, and at most `buffersize` tasks are submitted and not yet yielded (None: all at once).
        `resources`: what each task takes besides its slot (None: the executor's)."""
        options = None if resources is None else JobOptions(resources=resources)  # checked now
        size = self.chunksize if chunksize is None else chunksize
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"chunksize must be an int >= 1, got {size!r}")
        if buffersize is not None and (not isinstance(buffersize, int) or buffersize < 1):
            raise ValueError(f"buffersize must be an int >= 1 or None, got {buffersize!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        items = zip(*iterables)
        window: deque[concurrent.futures.Future] = deque()
        step = size if buffersize is None else min(size, buffersize)
        max_frame = self._client.max_frame

        def top_up() -> None:
            """Submit chunks while the window has room for one."""
            while buffersize is None or buffersize - len(window) >= step:
                chunk = list(itertools.islice(items, step if buffersize is None else buffersize - len(window)))
                if not chunk:
                    return
                jobs = []
                code = None if self._client.code is None else self._code()
                for start in range(0, len(chunk), size):
                    pack = TaskPacker(fn).pack  # per job: a global rebound is seen by the next
                    payloads = [pack(args) for args in chunk[start : start + size]]
                    if code is not None:
                        payloads = [with_code(payload, code) for payload in payloads]
                    problem = job_size_problem(payloads, max_frame)  # its settings were checked with the executor's
                    if problem is not None:
                        raise ValueError(problem)
                    jobs.append(self._job(payloads, options=options, code=code))
                futures = [future for job in jobs for future in job.owner]
                self._hand_over(jobs, *(partial(self._client.add_job, job) for job in jobs))
                window.extend(futures)

        top_up()  # the first window now, as Executor.map submits at the call
        # top_up has room for a chunk once the window is down to `low` (never again without a buffersize: it took all)
        low = -1 if buffersize is None else buffersize - step
        return _results_in_order(window, top_up, low, deadline)

    def _fetch(self, future: SparrowFuture) -> Any:
        """The value of `future`'s task, fetched from its node monitor by the trio thread (ValueLost)."""
        if trio.lowlevel.in_trio_run():
            raise RuntimeError(
                "the result of this future is kept at its node monitor: call result() outside the executor's callbacks"
            )
        return trio.from_thread.run(self._client.value_of, future._job, future._task, trio_token=self._loop.token)

    def _cancel_remote(self, future: SparrowFuture, force: bool = False) -> None:
        """Cancel `future`'s task on the cluster (after it was handed over: the order is kept; `force`: stop
        it if it runs), and the tasks waiting for it; a closed executor stops once nothing else is pending."""
        loop = self._loop
        cancel = partial(self._client.cancel_job, future._job, [future._task], force)
        loop.call_soon(cancel, partial(loop.settled, (future,)))

    def _cancel_not_started(self) -> None:
        """In the trio thread (after what was handed over): cancel the pending tasks that have not started;
        the scheduler, which hands them out, decides which (Client.cancel_pending)."""
        with self._loop.lock:
            pending = [f for f in self._loop.pending if isinstance(f, SparrowFuture) and not f.running()]
        by_job: dict[Job, list[int]] = {}
        for future in pending:
            by_job.setdefault(future._job, []).append(future._task)
        for job, tasks in by_job.items():
            self._client.cancel_pending(job, tasks)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; the tasks submitted still run to their outcomes, then the executor
        disconnects; with `wait`, return after that.

        `cancel_futures` cancels the futures still pending, here and on the cluster. Disconnecting ends
        every task still without an outcome as cancelled and takes at most a second, whatever the
        client is doing.
        """
        loop = self._loop
        if cancel_futures:
            loop.call_soon(self._cancel_not_started)
        loop.close()
        if wait:
            loop.join()


def _is_future(obj: object) -> bool:
    return isinstance(obj, SparrowFuture)


def _results_in_order(window: deque, top_up: Callable[[], None], low: int, deadline: float | None) -> Iterator:
    """Map's results in order. No local holds a result or a future across `yield` (a result the caller
    drops is freed), and a future is out of the window while it is waited for, so a wait that times out
    cancels its task along with those left in the window."""
    try:
        while window:
            yield _next_result(window, top_up, low, deadline)
    finally:
        for future in window:
            future.cancel()


def _next_result(window: deque, top_up: Callable[[], None], low: int, deadline: float | None) -> Any:
    """The next result of map's window (TimeoutError past `deadline`), the window topped up after it once it is
    down to `low` futures."""
    future = window.popleft()
    value = future._take_result(None if deadline is None else deadline - time.monotonic())
    if len(window) <= low:
        top_up()
    return value
