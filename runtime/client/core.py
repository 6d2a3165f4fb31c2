"""The async client: submit jobs of Python callables to a scheduler and collect their outcomes.

    async with Client(["127.0.0.1:7077", "127.0.0.1:7078"], secret=...) as client:
        job = await client.submit_job([partial(f, x) for x in xs], user="alice", retries=3)
        values = await job.results()            # in task order; raises the first task's exception
        async for outcome in job.as_completed():  # or one by one, as they finish
            ...
        job.cancel()                            # what has not finished ends as cancelled

`Client()` with no addresses connects to the `sparrow local` running on this host.

Fault tolerance (docs/runtime.md, "Failure behaviour"): the client holds a connection to one of its
schedulers, heartbeats it, and takes it for lost when it is silent for `scheduler_timeout` (a pause
of this process itself is not taken for the scheduler's silence). Then it connects to another at
once and relaunches there every task of its unfinished jobs that has no outcome yet: at-least-once,
a task whose outcome was lost with its scheduler may run twice. A relaunch, like any retry, is one
more attempt: a task is launched at most `retries + 1` times. System failures (its worker died, its
node monitor or its scheduler was lost) are retried; the task's own exceptions only with
`retry_exceptions=True`. With all schedulers gone, pending tasks fail with a TaskFailed that says so,
and the next submission tries them all again. Backpressure: `submit_job` waits while
`max_pending_tasks` tasks are unfinished.

Error handling: bad arguments raise ValueError/TypeError at submission, before anything is sent. A
task that raises has that exception re-raised by `TaskOutcome.result()` / `JobHandle.results()`
with the remote traceback as its `__cause__`. A task that got no result of its own raises TaskFailed
with the reason (TaskTimeout past its job's timeout); a cancelled one TaskCancelled. Every task ends
with exactly one outcome.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, NoReturn

import trio

from .. import views
from ..data import packed
from ..data.dependent import CodeRef, with_code
from ..data.links import DataLinks
from ..data.upload import Uploader
from ..errors import ConnectionLost, HandshakeError, ValueLost
from ..wire.address import Address, format_address, parse_address
from ..wire.auth import load_secret
from ..wire.connection import Connection
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.handshake import connect
from ..wire.limits import DEFAULT_MAX_VALUE, MAX_ID, MAX_NAME, MAX_TASK_RECORDS
from ..wire.link_config import DEFAULT_HANDSHAKE_TIMEOUT, LinkConfig
from ..wire.liveness import DEFAULT_SCHEDULER_TIMEOUT, Liveness
from ..wire.messages import (
    Constraint,
    Heartbeat,
    Outcome,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TaskRecord,
    TasksReply,
    TasksRequest,
)
from ..wire.task_codec import pack_task
from ..wire.tls import TLS, load_tls
from .code import CodeSource, CodeUploads
from .job import DEFAULT_RETRIES as DEFAULT_RETRIES
from .job import Job, Request, check_retries, split_requests
from .job import build_submit as build_submit
from .local_state import running_local_cluster
from .logic import ClientLogic, Held
from .logic import Failover as Failover
from .output import OutputCallback, output_policy
from .output import text as output_text
from .scatter import Scatter, prepare
from .task_inputs import Inputs, find_inputs, pack_template

logger = logging.getLogger(__name__)

DEFAULT_STATUS_TIMEOUT = 5.0
DEFAULT_MAX_PENDING_TASKS = 100_000
CLOSE_TIMEOUT = 0.5  # how long closing may take to tell the scheduler (a frozen one gets no more)

OutcomeCallback = Callable[[int, Outcome], None]


@dataclass(frozen=True)
class TaskOutcome:
    """The outcome of task `index` of a job: `ok` with its return value, or the exception it stands
    for; `attempts`: how many times it was launched (more than 1 after retries or a failover)."""

    index: int
    ok: bool
    value: object = None
    exception: BaseException | None = None
    attempts: int = 1

    def result(self) -> Any:
        """The task's return value, or raise its exception."""
        if not self.ok:
            assert self.exception is not None  # a failed outcome has one
            raise self.exception
        return self.value


class JobHandle:
    """A submitted job: its outcomes arrive as tasks finish."""

    def __init__(self, job: Job, client: Client | None = None, on_outcome: OutcomeCallback | None = None) -> None:
        self._job = job
        job.listener = self._arrived
        job.owner = self
        self._client = client
        self._on_outcome = on_outcome
        self._changed = trio.Event()  # replaced after each wait: wakes as_completed per outcome
        self._finished = trio.Event()  # set once: wakes wait() once per job

    def __del__(self) -> None:
        client = self._client
        # the values its tasks left at node monitors may go; a job that ended with none has nothing to release
        # (it costs the trio thread no wake-up)
        if client is not None and any(outcome is None or outcome.ref is not None for outcome in self._job.outcomes):
            client.dropped(self._job, None)

    @property
    def job_id(self) -> int | None:
        """The scheduler's id of the job's first placement, once accepted."""
        return self._job.job_id

    @property
    def n_tasks(self) -> int:
        return self._job.n_tasks

    @property
    def n_done(self) -> int:
        """How many tasks have their outcome."""
        return self._job.n_done

    @property
    def attempts(self) -> list[int]:
        """How many times each task was launched so far."""
        return self._job.attempts

    @property
    def retries(self) -> int:
        return self._job.retries

    @property
    def retry_exceptions(self) -> bool:
        return self._job.retry_exceptions

    @property
    def cancelled(self) -> bool:
        """Whether the whole job was cancelled."""
        return self._job.cancelled

    def __repr__(self) -> str:
        return views.job_repr(self)

    def _repr_html_(self) -> str:
        return views.job_html(self)

    def __getitem__(self, task: int) -> TaskRef:
        """Task `task`'s outcome as an input of another job's task: `partial(f, job[0])`."""
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < self.n_tasks:
            raise IndexError(f"task index must be an int in [0, {self.n_tasks}), got {task!r}")
        return TaskRef(self, task)

    def done(self) -> bool:
        """True once every task of the job has its outcome."""
        return self._job.done()

    def output(self, task: int, stream: str | None = None) -> str:
        """What task `task` wrote to `stream` ("stdout", "stderr"; None: its stdout, then its stderr) in its last
        attempt, as far as its node monitor's caps let through ("" if nothing, or it has no outcome yet)."""
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < self.n_tasks:
            raise IndexError(f"task index must be an int in [0, {self.n_tasks}), got {task!r}")
        return output_text(self._job, task, stream)

    def cancel(self, force: bool = False) -> None:
        """Cancel every task without an outcome: not launched yet, it never is; running, it finishes
        and its result is discarded, or with `force` its worker is killed. Each ends as cancelled
        (TaskCancelled) as soon as the scheduler hears of it."""
        if self._client is not None:
            self._client.cancel_job(self._job, None, force)

    def cancel_tasks(self, tasks: Sequence[int], force: bool = False) -> None:
        """Cancel some tasks (by index) as `cancel` does."""
        if self._client is not None:
            self._client.cancel_job(self._job, list(tasks), force)

    def _arrived(self, events: list[tuple[Job, int]]) -> None:
        """The client's shell: these tasks of this job have their outcome."""
        job = self._job
        self._changed.set()
        if job.n_done == job.n_tasks:
            self._finished.set()
        if self._on_outcome is not None:
            for _, task in events:
                self._on_outcome(task, job.outcomes[task])

    async def _outcome(self, task: int) -> TaskOutcome:
        """Task `task`'s outcome, its value fetched from its node monitor if it was kept there."""
        job = self._job
        attempts = max(job.attempts[task], 1)
        outcome = job.outcomes[task]
        if not outcome.ok:
            return TaskOutcome(task, False, exception=job.exception(task), attempts=attempts)
        if outcome.ref is None or self._client is None:
            return TaskOutcome(task, True, job.value(task), attempts=attempts)
        try:
            value = await self._client.value_of(job, task)
        except ValueLost as exc:
            return TaskOutcome(task, False, exception=exc, attempts=attempts)
        return TaskOutcome(task, True, value, attempts=attempts)

    async def wait(self) -> None:
        """Wait until every task has an outcome."""
        await self._finished.wait()

    async def outcomes(self) -> list[TaskOutcome]:
        """Every task's outcome, in task order, once all are in."""
        await self.wait()
        return [await self._outcome(t) for t in range(self.n_tasks)]

    async def results(self) -> list:
        """Every task's value in task order; raises the exception of the first failed task (by index)."""
        return [outcome.result() for outcome in await self.outcomes()]

    async def as_completed(self) -> AsyncIterator[TaskOutcome]:
        """Yield each task's outcome as it arrives (in arrival order)."""
        seen = 0
        order = self._job.order
        while True:
            while seen < len(order):
                yield await self._outcome(order[seen])
                seen += 1
            if self.done():
                return
            await self._changed.wait()
            self._changed = trio.Event()


class TaskRef:
    """Task `index` of the job `handle` (`handle[index]`), as an input of another job's task; also what
    `Client.scatter` returns for a value it uploaded (its job's one task)."""

    __slots__ = ("handle", "index")

    def __init__(self, handle: JobHandle, index: int) -> None:
        self.handle = handle
        self.index = index

    @property
    def key(self) -> tuple[Job, int]:
        """The client logic's name for this task."""
        return self.handle._job, self.index

    def __eq__(self, other: object) -> bool:
        return type(other) is TaskRef and other.handle is self.handle and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.handle), self.index))

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a TaskRef is an input only as an argument of a functools.partial task (also nested in lists, "
            "tuples, sets and dict values), not inside other objects"
        )

    def __repr__(self) -> str:
        return f"TaskRef(job {self.handle.job_id}, task {self.index})"

    async def result(self) -> Any:
        """The task's value (fetched from its node monitor if it was kept there), once it has one; or
        raise its exception."""
        await self.handle.wait()
        return (await self.handle._outcome(self.index)).result()


class Client:
    """A connection to one of `schedulers` (tried in random order, failing over to the others);
    None: those of the `sparrow local` on this host (and its credentials, unless some are given).

    Credentials: `tls` (tls.TLS: the cluster CA, this client's certificate and key), else `secret` or
    `secret_file` (the insecure shared-secret mode), else (with no `schedulers`) the `sparrow local`'s,
    else the SPARROW_TLS_CA/CERT/KEY variables, else SPARROW_SECRET / SPARROW_SECRET_FILE. Under TLS,
    jobs run as the user named in the certificate.

    Code shipped with every job (docs/code-shipping.md): `py_modules` (package directories, .py files or
    imported top-level modules) and `working_dir` (a directory the tasks run in) are packed here at once
    (CodeError for a limit, a path or a link out), uploaded once per content to a node monitor, and put first
    on the workers' `sys.path` for this client's tasks; a changed file is shipped again with the next job.

    The decisions are the client logic's (logic.py); this is its trio shell: it connects and fails
    over, heartbeats the scheduler, holds back submissions past `max_pending_tasks`, and sends what
    the logic says. `handshake_timeout` bounds each connection attempt (TCP connect and handshake),
    as it bounds the handshake a scheduler or node monitor waits for.

    `output`: what to do with what the tasks print (output.py): "print" (the default: each line to this
    process's stdout or stderr after a `(task JOB.TASK on NODE)` prefix), "keep" (only kept: JobHandle.output),
    or a callable `fn(job_id, task, output)`."""

    def __init__(
        self,
        schedulers: Sequence[str | Address] | str | None = None,
        *,
        secret: str | bytes | None = None,
        secret_file: str | None = None,
        tls: TLS | None = None,
        client_id: str | None = None,
        scheduler_timeout: float = DEFAULT_SCHEDULER_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        retry_exceptions: bool = False,
        max_pending_tasks: int = DEFAULT_MAX_PENDING_TASKS,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_value: int = DEFAULT_MAX_VALUE,
        py_modules: Iterable[object] | None = None,
        working_dir: str | os.PathLike | None = None,
        output: str | OutputCallback = "print",
    ) -> None:
        on_output = output_policy(output)  # checked first: a bad value raises before anything connects
        # the code every job ships (client/code.py): checked and packed now (CodeError), before any connection
        self.code = None if not py_modules and working_dir is None else CodeSource(py_modules or (), working_dir)
        if schedulers is None:
            try:
                state = running_local_cluster()
            except LookupError as exc:
                raise ConnectionLost(f"no scheduler given and {exc}, or pass the schedulers' addresses") from None
            schedulers = state.schedulers
            if secret is None and secret_file is None and tls is None:
                tls = state.tls()
                secret_file = state.secret_file
        if isinstance(schedulers, str):
            schedulers = [schedulers]
        self.schedulers = [parse_address(a) for a in schedulers]
        if not self.schedulers:
            raise ValueError("schedulers must name at least one scheduler address")
        check_retries(retries)
        if not isinstance(scheduler_timeout, (int, float)) or not 0 < scheduler_timeout < float("inf"):
            raise ValueError(f"scheduler_timeout must be a number of seconds > 0, got {scheduler_timeout!r}")
        if not isinstance(max_pending_tasks, int) or max_pending_tasks < 1:
            raise ValueError(f"max_pending_tasks must be an int >= 1, got {max_pending_tasks!r}")
        if tls is None and secret is None and secret_file is None:
            tls = load_tls()
        self._link = LinkConfig(  # checks the timeout and the frame limit
            secret=None if tls is not None else load_secret(secret, secret_file),
            tls=tls,
            handshake_timeout=handshake_timeout,
            max_frame=max_frame,
        )
        self.client_id = client_id or f"client-{uuid.uuid4().hex[:12]}"
        self.scheduler_timeout = float(scheduler_timeout)
        self.retries = retries
        self.retry_exceptions = retry_exceptions
        self.max_pending_tasks = max_pending_tasks
        self.handshake_timeout = float(handshake_timeout)
        self.max_frame = max_frame
        if isinstance(max_value, bool) or not isinstance(max_value, int) or max_value < 0:
            raise ValueError(f"max_value must be an int of bytes >= 0, got {max_value!r}")
        self.max_value = max_value
        self.output = output
        self._logic = ClientLogic(max_frame=self.max_frame, on_output=on_output)
        self._links = DataLinks(link=self._link, role="client", peer_id=self.client_id, max_value=max_value)
        self._uploader = Uploader(self._data_link)  # Client.scatter's (scatter.py)
        self._scatter = Scatter(self)
        self._code_uploads = CodeUploads(self)
        self._dropped: deque[tuple[Job, int | None]] = deque()  # owners gone (any thread), for the trio thread
        self._nursery: trio.Nursery | None = None
        self._conn: Connection | None = None
        self._room = trio.Event()  # set when an outcome frees room under max_pending_tasks
        self._wanted = trio.Event()  # set by a submission while no scheduler is reachable
        self._closing = False
        self._stack: AsyncExitStack | None = None
        self._scope: trio.CancelScope | None = None  # _keep_connected's, cut short by closing
        self._token: trio.lowlevel.TrioToken | None = None
        self._flush_due = False  # a flush is scheduled for the end of this pass of the trio loop
        self._query_waiters: list[_QueryWaiter] = []  # in request order: replies come in order

    @property
    def connected_to(self) -> str | None:
        """The address of the scheduler this client is connected to now, if any."""
        return None if self._conn is None else self._conn.peer_name

    @property
    def failovers(self) -> list[Failover]:
        """Each loss of the client's scheduler, oldest first."""
        return self._logic.failovers

    @property
    def unfinished(self) -> int:
        """How many submitted tasks have no outcome yet."""
        return self._logic.unfinished

    @property
    def unfinished_jobs(self) -> int:
        """How many submitted jobs have a task without an outcome yet."""
        return self._logic.unfinished_jobs

    @property
    def traffic(self) -> dict[str, int]:
        """The data that passed through this client so far: `bytes_sent` (task payloads, inputs
        included), `bytes_received` (outcomes: payloads and error text), `bytes_fetched` (values
        fetched from the node monitors that kept them), `bytes_uploaded` (values scattered to node
        monitors: Client.scatter) and `output_received` (what the tasks printed); message headers are not
        counted. A copy."""
        return {
            "bytes_sent": 0,
            "bytes_received": 0,
            "output_received": 0,
            **self._logic.traffic,
            "bytes_fetched": self._links.bytes_fetched,
            "bytes_uploaded": self._uploader.bytes_uploaded,
        }

    def __repr__(self) -> str:
        return views.client_repr(self)

    def _repr_html_(self) -> str:
        return views.client_html(self)

    async def __aenter__(self) -> Client:
        self._stack = AsyncExitStack()
        self._token = trio.lowlevel.current_trio_token()
        nursery = await self._stack.enter_async_context(trio.open_nursery())
        self._nursery = nursery
        self._scope = nursery.cancel_scope
        try:
            await nursery.start(self._keep_connected)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close within CLOSE_TIMEOUT, whatever the client is doing (connecting, reconnecting, serving):
        every task without an outcome ends cancelled."""
        self._closing = True
        msgs = self._logic.close()
        self._dispatch()
        with trio.CancelScope(shield=True):
            with trio.move_on_after(CLOSE_TIMEOUT):  # every value it held; a frozen holder gets no more time
                await self._links.release([*self._logic.values.take(), *self._code_uploads.take()])
            await self._links.aclose()  # closing sockets, no waiting: also after a release given up
            await self._uploader.aclose()
        conn = self._conn
        assert self._scope is not None and self._stack is not None, "__aexit__ without __aenter__"
        if conn is not None:
            self._send(msgs)
            conn.close_soon()
            self._scope.deadline = min(self._scope.deadline, trio.current_time() + CLOSE_TIMEOUT)
        else:
            self._scope.cancel()  # connecting: a frozen scheduler's handshake would only time out
        self._wanted.set()
        await self._stack.__aexit__(exc_type, exc, tb)

    # -- the connection ---------------------------------------------------------------------------

    async def _connect_any(self, last: str | None = None) -> tuple[Connection | None, list[str]]:
        """A connection to the first reachable scheduler, in random order but `last` (the one just
        lost, which may be frozen: its handshake would only time out) last; or None and the reasons."""
        errors: list[str] = []
        order = random.sample(self.schedulers, len(self.schedulers))
        order.sort(key=lambda address: format_address(address) == last)
        for address in order:
            try:
                conn = await connect(address, link=self._link, role="client", peer_id=self.client_id)
                return conn, errors
            except (OSError, HandshakeError) as exc:
                errors.append(f"{format_address(address)}: {exc}")
        return None, errors

    async def _keep_connected(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold a connection to one scheduler; when it is lost, fail over to another at once (the
        logic relaunches what had no outcome). Reports itself started once first connected (or raises)."""
        first = True
        lost = None
        while not self._closing:
            conn, errors = await self._connect_any(lost)
            if self._closing:
                if conn is not None:
                    await conn.aclose()
                return
            if conn is None:
                reason = "no scheduler reachable: " + "; ".join(errors)
                if first:
                    raise ConnectionLost(reason)
                self._logic.unreachable(reason)
                self._dispatch()
                self._wanted = trio.Event()
                await self._wanted.wait()  # until something is submitted: then try them all again
                continue
            self._conn = conn
            if first:
                first = False
                task_status.started()
            failed_over = bool(self.failovers) and self.failovers[-1].connected_at is None
            self._send(self._logic.connected(conn.peer_name, time.monotonic(), conn.send_limit))
            self._dispatch()  # tasks over the link's frame limit failed there
            if failed_over:
                logger.warning("failed over to %s: %d tasks relaunched", conn.peer_name, self.failovers[-1].relaunched)
            reason = await self._serve(conn)
            self._conn = None
            if self._closing:
                return
            lost = conn.peer_name
            logger.warning("lost scheduler %s: %s", conn.peer_name, reason)
            self._logic.lost(reason, time.monotonic())
            self._dispatch()

    async def _serve(self, conn: Connection) -> str:
        """Serve `conn` with heartbeats until it ends; returns why."""
        liveness = Liveness(self.scheduler_timeout, trio.current_time())

        def on_messages(msgs: list) -> None:
            liveness.heard = trio.current_time()
            try:
                self._send(self._logic.on_messages(msgs))
            finally:
                self._dispatch()
                self._answer_queries()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch, conn, liveness)
            reason = await conn.serve(on_messages)
            nursery.cancel_scope.cancel()
        for waiter in self._query_waiters:
            waiter.event.set()
        self._query_waiters.clear()
        return reason

    async def _watch(self, conn: Connection, liveness: Liveness) -> None:
        """Heartbeat the scheduler and drop it once it is silent for `scheduler_timeout` (Liveness)."""
        while True:
            asked = trio.current_time() + liveness.interval
            await trio.sleep_until(asked)
            liveness.heard = max(liveness.heard, conn.active_at)  # a big frame on its way (connection.py)
            if liveness.silent(trio.current_time(), asked):
                conn.drop(f"silent for more than {self.scheduler_timeout:g} s")
                return
            conn.send(Heartbeat())

    def _send(self, msgs: list) -> None:
        if msgs and self._conn is not None:  # held, unencoded and in order, while the link is full (backpressure)
            self._conn.send_later(msgs)

    def _dispatch(self) -> None:
        """Tell each job's owner of the outcomes the logic decided (and upload again the lost values the
        logic recomputes so: Client.scatter's)."""
        if self._logic.uploads and self._nursery is not None and not self._closing:
            jobs = self._logic.take_uploads()
            self._nursery.start_soon(self._scatter.send, jobs, [job.payloads[0] for job in jobs])
        events = self._logic.take_events()
        if not events:
            return
        start, listener = 0, events[0][0].listener
        for i in range(1, len(events)):  # one call per run of events with the same listener
            if events[i][0].listener != listener:
                if listener is not None:  # a job of this shell always has one
                    listener(events[start:i])
                start, listener = i, events[i][0].listener
        if listener is not None:
            listener(events[start:] if start else events)
        self._room.set()
        self._release()

    def _release(self) -> None:
        """Send the holders the values nobody holds any more (in the background)."""
        if self._logic.values.to_release and self._nursery is not None and not self._closing:
            self._nursery.start_soon(self._links.release, self._logic.values.take())

    def dropped(self, job: Job, task: int | None) -> None:
        """The owner of task `task` (None: of every task) of `job` is gone (from any thread, a finalizer
        included): its values are released in the trio thread."""
        self._dropped.append((job, task))
        token = self._token
        if token is not None:
            try:  # noqa: SIM105 (once per dropped task, from a finalizer: a try costs nothing, a suppress() an object)
                token.run_sync_soon(self._forget_dropped)
            except trio.RunFinishedError:
                pass

    def _forget_dropped(self) -> None:
        while self._dropped:
            job, task = self._dropped.popleft()
            for t in range(job.n_tasks) if task is None else (task,):
                self._logic.forget(job, t)
        self._release()

    async def value_of(self, job: Job, task: int) -> Any:
        """Task `task`'s value (its outcome ok), fetched from its node monitor if it was kept there; a
        value lost with its node monitor is recomputed from the task's call once, then fetched.

        Error handling: ValueLost, naming the node monitor and why, if it cannot be fetched and its
        recompute fails (or its call is not known)."""
        outcome = job.outcomes[task]
        if outcome.ref is None:
            return job.value(task)
        try:
            return packed.loads(await self._links.fetch(outcome.ref))
        except ValueLost as lost:
            rjob, new = self._logic.recompute(job, task)
            if rjob is None:
                raise
            logger.warning("%s: recomputing it", lost)
            finished = trio.Event()
            before = rjob.listener

            def heard(events: list) -> None:
                finished.set()
                if before is not None:
                    before(events)

            rjob.listener = heard
            if new:
                self.add_job(rjob)
            await finished.wait()
            again = rjob.outcomes[0]
            if not again.ok:
                raise ValueLost(f"{lost}; recomputing it failed: {again.error}") from None
            if again.ref is None:
                return job.value(task)
            return packed.loads(await self._links.fetch(again.ref))

    async def _data_link(self, address: str) -> Connection:
        """A new data link to the node monitor whose data listener is at `address` (uploads)."""
        return await connect(parse_address(address), link=self._link, role="client", peer_id=self.client_id)

    async def scatter(self, value: object, *, keep: bool = True) -> TaskRef:
        """Put `value` on a node monitor, uploaded from here (not through the scheduler), as if a task had
        returned it there: the reference is an input of tasks (`partial(f, ref)`: placed toward its node
        monitor, they read it there), `await ref.result()` fetches it, and dropping the reference releases it
        (client/scatter.py). `keep`: keep its pickled bytes here, to put it back should its node monitor
        die (else its dependents then fail with DependencyFailed naming it).

        Error handling: UploadFailed, naming the node monitor and why (refused: over its max_value or
        memory limit; stalled; no node monitor takes uploads)."""
        [ref] = await self.scatter_many([value], keep=keep)
        return ref

    async def scatter_many(self, values: Iterable, *, keep: bool = True) -> list[TaskRef]:
        """`scatter` for several values at once (uploaded together, spread over the node monitors)."""
        settings = build_submit([b""], "", 0, None, None)
        jobs, data = prepare(values, lambda payloads: Job(settings, payloads, retries=self.retries), keep)
        handles = [JobHandle(job, self) for job in jobs]
        await self._scatter.upload(jobs, data)
        for job in jobs:
            if not job.outcomes[0].ok:
                raise job.exception(0)
        return [handle[0] for handle in handles]

    async def job_code(self) -> CodeRef:
        """The reference a job's tasks carry to the client's code (`py_modules`, `working_dir`) as its files are
        now (client/code.py: rechecked at most every second), uploaded if this archive was not, or if the node
        monitor it went to is no longer registered. Raises CodeError, UploadFailed; RuntimeError without code."""
        if self.code is None:
            raise RuntimeError("this client ships no code: give it py_modules or a working_dir")
        source = self.code
        packed = await trio.to_thread.run_sync(source.current) if source.due() else source.packed
        return await self._code_uploads.ship(packed)

    def _answer_queries(self) -> None:
        replies = self._logic.query_replies
        while replies and self._query_waiters:
            waiter = self._query_waiters.pop(0)
            waiter.reply = replies.pop(0)
            waiter.event.set()

    def _flush(self) -> None:
        self._flush_due = False
        self._send(self._logic.flush())

    # -- submitting -------------------------------------------------------------------------------

    async def submit_job(
        self,
        tasks: Iterable[Callable[[], object]],
        *,
        user: str = "",
        priority: int = 0,
        probe_ratio: float | None = None,
        constraints: Constraint | Sequence[Constraint | None] | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        retry_exceptions: bool | None = None,
        prefer: Sequence[Sequence[str] | None] | None = None,
        sampling: str = "batch",
        resources: Request | Sequence[Request] = None,
    ) -> JobHandle:
        """Submit a job of zero-argument callables (use functools.partial for arguments).

        `user` is the fair-share user, `priority` the level (lower runs first where node monitors use
        the priority policy), `probe_ratio` the probes per task (default: the scheduler's).
        `constraints`: one Constraint for the whole job, or one Constraint-or-None per task.
        `timeout`: seconds each task may run before it is stopped (TaskTimeout; needs node monitors
        that run tasks in processes). `retries` / `retry_exceptions`: the client's, unless given
        (retries=0 for a task with side effects). `prefer`: one entry per task, None or the ids of
        node monitors to probe first for it, a soft preference (it may still run elsewhere: a busy
        node monitor does not hold it up). `sampling`: "batch" (Sparrow's batch sampling, the default)
        or "per_task" (each task gets ceil(probe_ratio) probes of its own and runs only at one of
        them: the paper's baseline, docs/runtime.md). `resources`: what each task takes besides its slot,
        like {"cpus": 2, "memory": "4GiB", "gpu": 1} (docs/resources.md), or one such request (or None)
        per task; a task runs only on a node monitor that holds its request, when it fits there (the
        tasks of each request are placed together); a bad amount is a ValueError here naming the task, a
        request no node monitor can hold fails its tasks after the scheduler's placement timeout. Waits
        while `max_pending_tasks` are unfinished.
        A task `partial(f, other_job[i], ...)` takes task i's result (docs/runtime.md, "Dependencies
        and Dask"): it is placed once its inputs are done, with their values.
        """
        tasks = list(tasks)  # keeps every task alive, so no id below is reused by another object
        packed: dict[int, bytes] = {}  # id -> payload: a callable repeated in a job is pickled once
        payloads: list[bytes] = []
        held: Held = {}  # task -> its call and inputs, for those that take outcomes
        for task in tasks:
            inputs = self._task_inputs(task)
            if inputs is not None:
                assert isinstance(task, partial)  # inputs are found in a partial's arguments only
                held[len(payloads)] = (pack_template(task.func, inputs), inputs)
                payloads.append(b"")  # set once its inputs are done
                continue
            payload = packed.get(id(task))
            if payload is None:
                payload = packed[id(task)] = pack_task(task)
            payloads.append(payload)
        request, task_resources = split_requests(resources, len(payloads))
        code = None if self.code is None else await self.job_code()
        if code is not None:
            payloads = [with_code(payload, code) if payload else payload for payload in payloads]
        msg = build_submit(
            payloads, user, priority, probe_ratio, constraints, self.max_frame, timeout, prefer, sampling, request
        )
        while self._logic.unfinished and self._logic.unfinished + len(payloads) > self.max_pending_tasks:
            if self._room.is_set():
                self._room = trio.Event()
            await self._room.wait()
        if self._conn is not None:
            await self._conn.wait_room()  # while the link to the scheduler is full
        await trio.lowlevel.checkpoint()
        return self.send_job(
            msg,
            retries=retries,
            retry_exceptions=retry_exceptions,
            held=held,
            task_resources=task_resources,
            code=code,
        )

    def _task_inputs(self, task: Callable[..., object]) -> Inputs | None:
        """The TaskRefs in a partial task's arguments (ValueError for another client's), or None;
        each input named by its key in the client logic."""
        if type(task) is not partial:
            return None
        inputs = find_inputs(task.args, task.keywords, lambda obj: type(obj) is TaskRef)
        if inputs is not None:
            for ref in inputs.keys:
                if ref.handle._client is not self:
                    raise ValueError(f"{ref!r} is a task of another client's job")
            inputs.keys = [ref.key for ref in inputs.keys]
        return inputs

    def send_job(
        self,
        msg: SubmitJob,
        on_outcome: OutcomeCallback | None = None,
        *,
        retries: int | None = None,
        retry_exceptions: bool | None = None,
        held: Held | None = None,
        task_resources: list[dict[str, int] | None] | None = None,
        code: CodeRef | None = None,
    ) -> JobHandle:
        """Send a job built by `build_submit` (synchronous: from trio code or `run_sync_soon`).

        `on_outcome(task, outcome)` (optional) is called with each task's Outcome as it arrives.
        `held`: tasks that wait for inputs (task -> its call with Slots and its inputs, task_inputs.py).
        `task_resources`: each task's own request in units (split_requests), None: `msg.resources` for all.
        `code`: the code its tasks run in (`job_code`; their payloads name it already), for those held.
        """
        job = Job(
            msg,
            msg.tasks,
            retries=self.retries if retries is None else check_retries(retries),
            retry_exceptions=self.retry_exceptions if retry_exceptions is None else retry_exceptions,
        )
        job.task_resources = task_resources
        job.code = code
        handle = JobHandle(job, self, on_outcome)
        self.add_job(job, held)
        return handle

    def add_job(self, job: Job, held: Held | None = None) -> None:
        """Add `job` (its `listener` hears each outcome; synchronous, in the trio thread). A job that
        may be coalesced goes with the others added in this pass of the trio loop, the rest now."""
        self._logic.add(job, held)
        if self._conn is None:
            self._wanted.set()  # reconnecting (its tasks go with the relaunch) or none reachable
        elif job.coalesce:
            if not self._flush_due:
                self._flush_due = True
                assert self._token is not None  # set by __aenter__
                self._token.run_sync_soon(self._flush)
        else:
            self._send(self._logic.flush())
        self._dispatch()

    def cancel_job(self, job: Job, tasks: list[int] | None = None, force: bool = False) -> None:
        """Cancel `tasks` (None: all) of `job` (JobHandle.cancel); synchronous, in the trio thread."""
        self._send(self._logic.cancel(job, tasks, force))
        self._dispatch()

    def cancel_pending(self, job: Job, tasks: list[int]) -> None:
        """Cancel those of `tasks` of `job` that have not started (ClientLogic.cancel_pending), in the trio thread."""
        self._send(self._logic.cancel_pending(job, tasks))
        self._dispatch()

    async def status(self, timeout: float = DEFAULT_STATUS_TIMEOUT) -> StatusReply:
        """What the scheduler knows: its node monitors (slots, labels, queue lengths, last heard
        from), its jobs in flight and its counters.

        Error handling: ConnectionLost if the connection is or gets lost; trio.TooSlowError if no
        answer comes within `timeout` seconds.
        """
        reply = await self._ask(self._logic.status_request(), timeout)
        assert isinstance(reply, StatusReply)  # replies come in request order (the logic checks their kinds)
        return reply

    async def tasks(
        self,
        *,
        user: str = "",
        failed: bool = False,
        job: int | None = None,
        since: float = 0.0,
        limit: int = MAX_TASK_RECORDS,
        timeout: float = DEFAULT_STATUS_TIMEOUT,
    ) -> list[TaskRecord]:
        """The scheduler's records of recent tasks (services/task_history.py), newest first: only `user`'s (a
        user sees only their own; an admin or, without TLS, anyone may name any, "" for all), only failed
        ones, only of job `job` (its id), only ended in the last `since` seconds (0: any), at most `limit`.

        Error handling: ValueError for a bad filter (nothing is sent); ConnectionLost and trio.TooSlowError
        as `status`.
        """
        if len(user) > MAX_NAME:
            raise ValueError(f"tasks: user must be at most {MAX_NAME} characters, got {len(user)}")
        if job is not None and not 0 <= job <= MAX_ID:
            raise ValueError(f"tasks: job must be a job id (0 to {MAX_ID}), got {job!r}")
        if not 0 <= since < math.inf:
            raise ValueError(f"tasks: since must be a number of seconds >= 0, got {since!r}")
        if not 1 <= limit <= MAX_TASK_RECORDS:
            raise ValueError(f"tasks: limit must be 1 to {MAX_TASK_RECORDS}, got {limit!r}")
        request = TasksRequest(user, failed, -1 if job is None else job, float(since), limit)
        reply = await self._ask(self._logic.tasks_request(request), timeout)
        assert isinstance(reply, TasksReply)
        return reply.tasks

    async def _ask(self, request: StatusRequest | TasksRequest, timeout: float) -> StatusReply | TasksReply:
        """Send `request` to the scheduler and wait for its answer."""
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("the client is not connected to a scheduler")
        waiter = _QueryWaiter()
        self._query_waiters.append(waiter)
        conn.send(request)
        with trio.fail_after(timeout):
            await waiter.event.wait()
        if waiter.reply is None:
            raise ConnectionLost("the connection to the scheduler was lost")
        return waiter.reply


class _QueryWaiter:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.reply: StatusReply | TasksReply | None = None
