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
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial

import trio

from ..errors import ConnectionLost, HandshakeError, ProtocolError
from ..wire.address import Address, format_address, parse_address
from ..wire.auth import load_secret
from ..wire.connection import Connection
from ..wire.framing import DEFAULT_MAX_FRAME, check_max_frame
from ..wire.handshake import DEFAULT_HANDSHAKE_TIMEOUT, connect
from ..wire.limits import MAX_REASON, clip, job_problem, too_large
from ..wire.messages import (
    CANCELLED,
    SYSTEM,
    TOO_LARGE,
    UNPLACEABLE,
    CancelJob,
    Constraint,
    Heartbeat,
    JobAccepted,
    JobRejected,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TaskResult,
)
from ..wire.task_codec import outcome_exception, pack_task, unpack_outcome
from .local_state import running_local_cluster
from .task_inputs import Inputs, find_inputs, pack_template

logger = logging.getLogger(__name__)

FRAME_OVERHEAD_PER_TASK = 16  # msgpack bytes around each task payload in SubmitJob, generously
FRAME_OVERHEAD_PER_JOB = 1024  # bytes of a SubmitJob besides its tasks, generously
DEFAULT_STATUS_TIMEOUT = 5.0
DEFAULT_SCHEDULER_TIMEOUT = 1.0  # a LAN: heartbeats every 0.25 s, a dead or frozen scheduler noticed within 1 s
DEFAULT_RETRIES = 3  # as Ray: system failures are retried 3 times
DEFAULT_MAX_PENDING_TASKS = 100_000
HEARTBEATS_PER_TIMEOUT = 4

OutcomeCallback = Callable[[int, bool, bytes, str, int], None]
OutcomeWatcher = Callable[["JobHandle", int, bool, bytes, str, int], None]


@dataclass(frozen=True)
class TaskOutcome:
    """The outcome of task `index` of a job: `ok` with its return value, or the exception it stands
    for; `attempts`: how many times it was launched (more than 1 after retries or a failover)."""

    index: int
    ok: bool
    value: object = None
    exception: BaseException | None = None
    attempts: int = 1

    def result(self):
        """The task's return value, or raise its exception."""
        if not self.ok:
            raise self.exception
        return self.value


@dataclass
class Failover:
    """One loss of the client's scheduler, with `time.monotonic()` times: `lost_at` when the client
    noticed, `connected_at` when it was connected to `to` (None: no scheduler was reachable), and the
    tasks it relaunched there."""

    scheduler: str
    reason: str
    lost_at: float
    connected_at: float | None = None
    to: str | None = None
    relaunched: int = 0


class Liveness:
    """When a peer that answers every heartbeat is taken for dead: silent for `timeout` seconds,
    checked every `interval` (timeout / HEARTBEATS_PER_TIMEOUT). A check that wakes up much later than
    it asked (more than an interval late) means this process was paused (a stopped process, a long
    GC, an overloaded machine): the peer then gets a fresh `timeout` to answer instead of being taken
    for dead, so a pause of our own causes no failover storm."""

    def __init__(self, timeout: float, now: float) -> None:
        self.timeout = timeout
        self.interval = timeout / HEARTBEATS_PER_TIMEOUT
        self.heard = now  # when the peer was last heard from

    def silent(self, now: float, asked: float) -> bool:
        """At a check that asked to run at `asked` and runs at `now`: is the peer silent too long?"""
        if now - asked > self.interval:  # we were paused, not the peer
            self.heard = now
            return False
        return now - self.heard > self.timeout


class JobHandle:
    """A submitted job: its outcomes arrive as tasks finish."""

    def __init__(
        self,
        template: SubmitJob,
        *,
        retries: int = DEFAULT_RETRIES,
        retry_exceptions: bool = False,
        on_outcome: OutcomeCallback | None = None,
        client: Client | None = None,
    ) -> None:
        self.job_id: int | None = None  # the scheduler's id of its first placement, once accepted
        self.n_tasks = len(template.tasks)
        self.retries = retries
        self.retry_exceptions = retry_exceptions
        self.cancelled = False  # the whole job
        self._cancelled_tasks: set[int] = set()  # tasks cancelled one by one
        self._template = template  # user, priority, constraints, timeout; tasks: payloads until done
        self._payloads: list[bytes | None] = list(template.tasks)
        self.attempts = [0] * self.n_tasks
        self._raw: list[tuple[bool, bytes, str, int] | None] = [None] * self.n_tasks
        self._order: list[int] = []
        self._n_done = 0
        self._changed = trio.Event()  # replaced after each wait: wakes as_completed per outcome
        self._finished = trio.Event()  # set once: wakes wait() once per job
        self._on_outcome = on_outcome
        self._client = client
        self._refs: set[int] = set()  # the client's refs of this job's placements in flight
        self._held: set[int] = set()  # tasks waiting for other tasks' outcomes (dependencies.py)
        self._watchers: list[OutcomeWatcher] = []  # called as each outcome arrives (dependencies.py)

    def __getitem__(self, task: int) -> TaskRef:
        """Task `task`'s outcome as an input of another job's task: `partial(f, job[0])`."""
        if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < self.n_tasks:
            raise IndexError(f"task index must be an int in [0, {self.n_tasks}), got {task!r}")
        return TaskRef(self, task)

    def done(self) -> bool:
        return self._n_done == self.n_tasks

    def cancel(self, force: bool = False) -> None:
        """Cancel every task without an outcome: not launched yet, it never is; running, it finishes
        and its result is discarded, or with `force` its worker is killed. Each ends as cancelled
        (TaskCancelled) as soon as the scheduler hears of it."""
        self.cancelled = True
        self._cancelled_tasks.update(range(self.n_tasks))
        if self._client is not None:
            self._client._cancel(self, None, force)

    def cancel_tasks(self, tasks: Sequence[int], force: bool = False) -> None:
        """Cancel some tasks (by index) as `cancel` does."""
        self._cancelled_tasks.update(tasks)
        if self._client is not None:
            self._client._cancel(self, list(tasks), force)

    def _set(self, task: int, ok: bool, payload: bytes, error: str, failure: int = 0) -> None:
        if not 0 <= task < self.n_tasks or self._raw[task] is not None:
            raise ProtocolError(f"scheduler sent a second or out-of-range outcome for task {task}")
        self._raw[task] = (ok, payload, error, failure)
        self._payloads[task] = None
        self._order.append(task)
        self._n_done += 1
        self._changed.set()
        if self._n_done == self.n_tasks:
            self._finished.set()
        if self._client is not None:
            self._client._task_ended(self)
        if self._on_outcome is not None:
            self._on_outcome(task, ok, payload, error, failure)
        for watcher in self._watchers:
            watcher(self, task, ok, payload, error, failure)

    def _pending(self) -> list[int]:
        """The tasks without an outcome that can be placed (not waiting for inputs)."""
        return [t for t in range(self.n_tasks) if self._raw[t] is None and t not in self._held]

    def _fail_rest(self, reason: str, failure: int = SYSTEM) -> None:
        for task in range(self.n_tasks):
            if self._raw[task] is None:
                self._set(task, False, b"", reason, failure)

    def _outcome(self, task: int) -> TaskOutcome:
        ok, payload, error, failure = self._raw[task]
        attempts = max(self.attempts[task], 1)
        if ok:
            return TaskOutcome(task, True, unpack_outcome(ok, payload, error), attempts=attempts)
        return TaskOutcome(task, False, exception=outcome_exception(payload, error, failure), attempts=attempts)

    async def wait(self) -> None:
        """Wait until every task has an outcome."""
        await self._finished.wait()

    async def _wait_change(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    async def outcomes(self) -> list[TaskOutcome]:
        """Every task's outcome, in task order, once all are in."""
        await self.wait()
        return [self._outcome(t) for t in range(self.n_tasks)]

    async def results(self) -> list:
        """Every task's value in task order; raises the exception of the first failed task (by index)."""
        return [outcome.result() for outcome in await self.outcomes()]

    async def as_completed(self) -> AsyncIterator[TaskOutcome]:
        """Yield each task's outcome as it arrives (in arrival order)."""
        seen = 0
        while True:
            while seen < len(self._order):
                yield self._outcome(self._order[seen])
                seen += 1
            if self.done():
                return
            await self._wait_change()


class TaskRef:
    """Task `index` of the job `handle` (`handle[index]`), as an input of another job's task."""

    __slots__ = ("handle", "index")

    def __init__(self, handle: JobHandle, index: int) -> None:
        self.handle = handle
        self.index = index

    def __eq__(self, other: object) -> bool:
        return type(other) is TaskRef and other.handle is self.handle and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.handle), self.index))

    def __reduce__(self):
        raise TypeError(
            "a TaskRef is an input only as an argument of a functools.partial task (also nested in lists, "
            "tuples, sets and dict values), not inside other objects"
        )

    def __repr__(self) -> str:
        return f"TaskRef(job {self.handle.job_id}, task {self.index})"


class Client:
    """A connection to one of `schedulers` (tried in random order, failing over to the others);
    None: those of the `sparrow local` on this host (and its secret, unless one is given)."""

    def __init__(
        self,
        schedulers: Sequence[str | Address] | str | None = None,
        *,
        secret: str | bytes | None = None,
        secret_file: str | None = None,
        client_id: str | None = None,
        scheduler_timeout: float = DEFAULT_SCHEDULER_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        retry_exceptions: bool = False,
        max_pending_tasks: int = DEFAULT_MAX_PENDING_TASKS,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        if schedulers is None:
            try:
                state = running_local_cluster()
            except LookupError as exc:
                raise ConnectionLost(f"no scheduler given and {exc}, or pass the schedulers' addresses") from None
            schedulers = state.schedulers
            if secret is None and secret_file is None:
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
        self._secret = load_secret(secret, secret_file)
        self.client_id = client_id or f"client-{uuid.uuid4().hex[:12]}"
        self.scheduler_timeout = float(scheduler_timeout)
        self.retries = retries
        self.retry_exceptions = retry_exceptions
        self.max_pending_tasks = max_pending_tasks
        self.handshake_timeout = handshake_timeout
        self.max_frame = check_max_frame(max_frame)
        self.failovers: list[Failover] = []
        self._conn: Connection | None = None
        self._placements: dict[int, tuple[JobHandle, list[int]]] = {}  # ref -> (job, its task indexes)
        self._handles: set[JobHandle] = set()  # unfinished
        self._next_ref = 1
        self._unfinished = 0
        self._room = trio.Event()  # set when an outcome frees room under max_pending_tasks
        self._wanted = trio.Event()  # set by a submission while no scheduler is reachable
        self._closing = False
        self._stack: AsyncExitStack | None = None
        self._status_waiters: list[_StatusWaiter] = []  # in request order: replies come in order
        self._inputs = None  # dependencies.ClientInputs, once a task takes another's outcome

    @property
    def connected_to(self) -> str | None:
        """The address of the scheduler this client is connected to now, if any."""
        return None if self._conn is None else self._conn.peer_name

    async def __aenter__(self) -> Client:
        self._stack = AsyncExitStack()
        nursery = await self._stack.enter_async_context(trio.open_nursery())
        try:
            await nursery.start(self._keep_connected)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._closing = True
        if self._conn is not None:
            self._conn.close_soon()
        self._wanted.set()
        await self._stack.__aexit__(*exc_info)

    # -- the connection ---------------------------------------------------------------------------

    async def _connect_any(self, last: str | None = None) -> tuple[Connection | None, list[str]]:
        """A connection to the first reachable scheduler, in random order but `last` (the one just
        lost, which may be frozen: its handshake would only time out) last; or None and the reasons."""
        errors = []
        order = random.sample(self.schedulers, len(self.schedulers))
        order.sort(key=lambda address: format_address(address) == last)
        for address in order:
            try:
                conn = await connect(
                    address, secret=self._secret, role="client", peer_id=self.client_id,
                    timeout=self.handshake_timeout, max_frame=self.max_frame,
                )  # fmt: skip
                return conn, errors
            except (OSError, HandshakeError) as exc:
                errors.append(f"{format_address(address)}: {exc}")
        return None, errors

    async def _keep_connected(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Hold a connection to one scheduler; when it is lost, fail over to another at once and
        relaunch what had no outcome. Reports itself started once first connected (or raises)."""
        first = True
        lost = None
        while not self._closing:
            conn, errors = await self._connect_any(lost)
            if conn is None:
                reason = "no scheduler reachable: " + "; ".join(errors)
                if first:
                    raise ConnectionLost(reason)
                self._fail_everything(reason)
                self._wanted = trio.Event()
                await self._wanted.wait()  # until something is submitted: then try them all again
                continue
            self._conn = conn
            if first:
                first = False
                task_status.started()
            elif self.failovers and self.failovers[-1].connected_at is None:
                record = self.failovers[-1]
                record.connected_at, record.to = time.monotonic(), conn.peer_name
                record.relaunched = self._relaunch_all()
                logger.warning("failed over to %s: %d tasks relaunched", conn.peer_name, record.relaunched)
            else:
                self._relaunch_all()  # after a failure to reach any: what was submitted meanwhile
            reason = await self._serve(conn)
            self._conn = None
            if self._closing:
                return
            lost = conn.peer_name
            logger.warning("lost scheduler %s: %s", conn.peer_name, reason)
            self.failovers.append(Failover(conn.peer_name, reason, time.monotonic()))
            self._placements_lost(f"scheduler {conn.peer_name} was lost ({clip(reason, MAX_REASON)})")

    async def _serve(self, conn: Connection) -> str:
        """Serve `conn` with heartbeats until it ends; returns why."""
        self._liveness = Liveness(self.scheduler_timeout, trio.current_time())

        def on_messages(msgs: list) -> None:
            self._liveness.heard = trio.current_time()
            self._on_messages(msgs)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch, conn)
            reason = await conn.serve(on_messages)
            nursery.cancel_scope.cancel()
        for waiter in self._status_waiters:
            waiter.event.set()
        self._status_waiters.clear()
        return reason

    async def _watch(self, conn: Connection) -> None:
        """Heartbeat the scheduler and drop it once it is silent for `scheduler_timeout` (Liveness)."""
        liveness = self._liveness
        while True:
            asked = trio.current_time() + liveness.interval
            await trio.sleep_until(asked)
            liveness.heard = max(liveness.heard, conn.active_at)  # a big frame on its way
            if liveness.silent(trio.current_time(), asked):
                conn.drop(f"silent for more than {self.scheduler_timeout:g} s")
                return
            conn.send(Heartbeat())

    def _placements_lost(self, reason: str) -> None:
        """The scheduler is gone with every placement it held: relaunch what may be (on the next
        connection), fail what may not."""
        self._placements.clear()
        for handle in list(self._handles):
            handle._refs.clear()
            pending = handle._pending()
            for task in pending:
                if task in handle._cancelled_tasks:
                    handle._set(task, False, b"", "cancelled by its client", CANCELLED)
            self._retry_or_fail(handle, [t for t in pending if t not in handle._cancelled_tasks], reason)

    def _retry_or_fail(self, handle: JobHandle, tasks: list[int], reason: str) -> list[int]:
        """Fail the tasks of `tasks` that used all their attempts (with `reason`); returns the rest."""
        again = []
        for task in tasks:
            if handle.attempts[task] > handle.retries:
                attempts = handle.attempts[task]
                handle._set(task, False, b"", f"{reason} (after {attempts} attempt{'s' * (attempts > 1)})", SYSTEM)
            else:
                again.append(task)
        return again

    def _relaunch_all(self) -> int:
        """Launch every pending task of every unfinished job on the current (new) connection: no
        scheduler holds any of them."""
        count = 0
        for handle in list(self._handles):
            pending = handle._pending()
            if pending:
                self._place(handle, pending)
                count += len(pending)
        return count

    def _fail_everything(self, reason: str) -> None:
        for handle in list(self._handles):
            handle._fail_rest(reason)
        self._placements.clear()

    # -- messages ---------------------------------------------------------------------------------

    def _on_messages(self, msgs: list) -> None:
        retry: dict[JobHandle, list[int]] = {}
        for msg in msgs:
            kind = type(msg)
            if kind is TaskResult:
                placement = self._placements.get(msg.ref)
                if placement is None:
                    raise ProtocolError(f"outcome for job ref {msg.ref}, which this client does not wait for")
                handle, indexes = placement
                if msg.last:
                    self._forget_placement(msg.ref)
                if msg.task >= len(indexes):
                    raise ProtocolError(f"outcome for task {msg.task} of a job of {len(indexes)} tasks")
                task = indexes[msg.task]
                if handle._raw[task] is not None:
                    continue  # cancelled here before the scheduler heard
                if self._retryable(handle, task, msg) and handle.attempts[task] <= handle.retries:
                    retry.setdefault(handle, []).append(task)
                    continue
                handle._set(task, msg.ok, msg.payload, msg.error, msg.failure)
            elif kind is JobAccepted:
                placement = self._placements.get(msg.ref)
                if placement is not None and placement[0].job_id is None:
                    placement[0].job_id = msg.job_id
            elif kind is JobRejected:
                placement = self._forget_placement(msg.ref)
                if placement is not None:
                    handle, indexes = placement
                    reason = f"the scheduler rejected the job: {clip(msg.reason, MAX_REASON)}"
                    for task in indexes:
                        if handle._raw[task] is None:
                            handle._set(task, False, b"", reason, UNPLACEABLE)
            elif kind is StatusReply:
                if not self._status_waiters:
                    raise ProtocolError("StatusReply without a StatusRequest")
                waiter = self._status_waiters.pop(0)
                waiter.reply = msg
                waiter.event.set()
            elif kind is not Heartbeat:
                raise ProtocolError(f"{kind.__name__} is not allowed from a scheduler")
        for handle, tasks in retry.items():
            self._place(handle, tasks)

    def _retryable(self, handle: JobHandle, task: int, msg: TaskResult) -> bool:
        if task in handle._cancelled_tasks:
            return False
        return msg.failure == SYSTEM or (handle.retry_exceptions and not msg.ok and msg.failure == 0)

    def _forget_placement(self, ref: int) -> tuple[JobHandle, list[int]] | None:
        placement = self._placements.pop(ref, None)
        if placement is not None:
            placement[0]._refs.discard(ref)
        return placement

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
    ) -> JobHandle:
        """Submit a job of zero-argument callables (use functools.partial for arguments).

        `user` is the fair-share user, `priority` the level (lower runs first where node monitors use
        the priority policy), `probe_ratio` the probes per task (default: the scheduler's).
        `constraints`: one Constraint for the whole job, or one Constraint-or-None per task.
        `timeout`: seconds each task may run before it is stopped (TaskTimeout; needs node monitors
        that run tasks in processes). `retries` / `retry_exceptions`: the client's, unless given
        (retries=0 for a task with side effects). Waits while `max_pending_tasks` are unfinished.
        A task `partial(f, other_job[i], ...)` takes task i's result (docs/runtime.md, "Dependencies
        and Dask"): it is placed once its inputs are done, with their values.
        """
        tasks = list(tasks)  # keeps every task alive, so no id below is reused by another object
        packed: dict[int, bytes] = {}  # id -> payload: a callable repeated in a job is pickled once
        payloads = []
        held: dict[int, tuple[bytes, Inputs]] = {}  # task -> its call and inputs, for those that take outcomes
        for task in tasks:
            inputs = self._task_inputs(task)
            if inputs is not None:
                held[len(payloads)] = (pack_template(task.func, inputs), inputs)
                payloads.append(b"")  # set once its inputs are done
                continue
            payload = packed.get(id(task))
            if payload is None:
                payload = packed[id(task)] = pack_task(task)
            payloads.append(payload)
        msg = build_submit(payloads, user, priority, probe_ratio, constraints, self.max_frame, timeout)
        while self._unfinished and self._unfinished + len(payloads) > self.max_pending_tasks:
            if self._room.is_set():
                self._room = trio.Event()
            await self._room.wait()
        if self._conn is not None:
            await self._conn.wait_room()  # while the link to the scheduler is full
        await trio.lowlevel.checkpoint()
        return self.send_job(msg, retries=retries, retry_exceptions=retry_exceptions, held=held)

    def _task_inputs(self, task) -> Inputs | None:
        """The TaskRefs in a partial task's arguments (ValueError for another client's), or None."""
        if type(task) is not partial:
            return None
        inputs = find_inputs(task.args, task.keywords, lambda obj: type(obj) is TaskRef)
        if inputs is not None:
            for ref in inputs.keys:
                if ref.handle._client is not self:
                    raise ValueError(f"{ref!r} is a task of another client's job")
        return inputs

    def send_job(
        self,
        msg: SubmitJob,
        on_outcome: OutcomeCallback | None = None,
        *,
        retries: int | None = None,
        retry_exceptions: bool | None = None,
        held: dict[int, tuple[bytes, Inputs]] | None = None,
    ) -> JobHandle:
        """Send a job built by `build_submit` (synchronous: from trio code or `run_sync_soon`).

        `on_outcome(task, ok, payload, error, failure)` (optional) is called as each outcome arrives.
        `held`: tasks that wait for inputs (task -> its call with Slots and its inputs, task_inputs.py).
        """
        handle = JobHandle(
            msg,
            retries=self.retries if retries is None else check_retries(retries),
            retry_exceptions=self.retry_exceptions if retry_exceptions is None else retry_exceptions,
            on_outcome=on_outcome,
            client=self,
        )
        if self._closing:
            handle._fail_rest("the client is closed")
            return handle
        self._handles.add(handle)
        self._unfinished += handle.n_tasks
        if held:
            from .dependencies import ClientInputs  # imports this module

            handle._held.update(held)
            if self._inputs is None:
                self._inputs = ClientInputs(self)
            self._inputs.hold(handle, held)
        if self._conn is None:  # reconnecting (its tasks go with the relaunch) or none reachable
            self._wanted.set()
            return handle
        placeable = handle._pending()
        if placeable:
            self._place(handle, placeable)
        return handle

    def place_held(self, handle: JobHandle, tasks: list[int], payloads: list[bytes]) -> None:
        """Place tasks of `handle` that were held for their inputs, with their payloads now known."""
        for task, payload in zip(tasks, payloads, strict=True):
            handle._payloads[task] = handle._template.tasks[task] = payload
            handle._held.discard(task)
        if self._conn is None:
            self._wanted.set()  # placed with the relaunch once connected
        self._place(handle, tasks)

    def _place(self, handle: JobHandle, tasks: list[int]) -> None:
        """Send `tasks` of `handle` (one more attempt each) on the current connection: as one job, or
        as several where one would be over the link's frame limit (the smaller of this client's and
        the scheduler's max_frame); a task over it by itself fails alone (TOO_LARGE)."""
        if self._conn is None:
            return  # relaunched once connected
        for part in self._fitting(handle, tasks):
            self._place_part(handle, part)

    def _fitting(self, handle: JobHandle, tasks: list[int]) -> list[list[int]]:
        """`tasks` in parts that each fit in one SubmitJob frame; those that fit in none fail."""
        limit = self._conn.send_limit - FRAME_OVERHEAD_PER_JOB
        sizes = [len(handle._payloads[t]) + FRAME_OVERHEAD_PER_TASK for t in tasks]
        if sum(sizes) <= limit:
            return [tasks]
        parts: list[list[int]] = [[]]
        room = limit
        for task, size in zip(tasks, sizes, strict=True):
            where = f"of the link to scheduler {self._conn.peer_name}"
            problem = too_large("the task's payload", len(handle._payloads[task]), self._conn.send_limit, where)
            if problem is not None:
                handle.attempts[task] += 1
                handle._set(task, False, b"", problem, TOO_LARGE)
                continue
            if size > room:
                parts.append([])
                room = limit
            parts[-1].append(task)
            room -= size
        return [part for part in parts if part]

    def _place_part(self, handle: JobHandle, tasks: list[int]) -> None:
        template = handle._template
        ref = self._next_ref
        self._next_ref += 1
        for task in tasks:
            handle.attempts[task] += 1
        task_constraints = template.task_constraints
        if task_constraints is not None and len(tasks) != handle.n_tasks:
            task_constraints = [task_constraints[t] for t in tasks]
        payloads = template.tasks if len(tasks) == handle.n_tasks else [handle._payloads[t] for t in tasks]
        self._placements[ref] = (handle, tasks)
        handle._refs.add(ref)
        submit = SubmitJob(
            ref,
            payloads,
            template.user,
            template.priority,
            template.probe_ratio,
            template.constraint,
            task_constraints,
            template.timeout,
        )
        self._conn.send_later((submit,))  # backpressure: held, unencoded, while the link is full (connection.py)

    def _cancel(self, handle: JobHandle, tasks: list[int] | None, force: bool) -> None:
        """Cancel `tasks` (None: all) of `handle` at its scheduler, and end at once those no
        scheduler holds."""
        wanted = set(range(handle.n_tasks) if tasks is None else tasks)
        held = set()
        for ref in list(handle._refs):
            indexes = self._placements[ref][1]
            local = [i for i, t in enumerate(indexes) if t in wanted and handle._raw[t] is None]
            if local and self._conn is not None:
                self._conn.send_later((CancelJob(ref, force, None if len(local) == len(indexes) else local),))
                held.update(indexes[i] for i in local)
        for task in sorted(wanted - held):
            if 0 <= task < handle.n_tasks and handle._raw[task] is None:
                handle._set(task, False, b"", "cancelled by its client", CANCELLED)

    def _task_ended(self, handle: JobHandle) -> None:
        self._unfinished -= 1
        self._room.set()
        if handle.done():
            self._handles.discard(handle)

    async def status(self, timeout: float = DEFAULT_STATUS_TIMEOUT) -> StatusReply:
        """What the scheduler knows: its node monitors (slots, labels, queue lengths, last heard
        from), its jobs in flight and its counters.

        Error handling: ConnectionLost if the connection is or gets lost; trio.TooSlowError if no
        answer comes within `timeout` seconds.
        """
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("the client is not connected to a scheduler")
        waiter = _StatusWaiter()
        self._status_waiters.append(waiter)
        conn.send(StatusRequest())
        with trio.fail_after(timeout):
            await waiter.event.wait()
        if waiter.reply is None:
            raise ConnectionLost("the connection to the scheduler was lost")
        return waiter.reply


class _StatusWaiter:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.reply: StatusReply | None = None


def check_retries(retries: int) -> int:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, got {retries!r}")
    return retries


def build_submit(
    payloads: list[bytes],
    user: str,
    priority: int,
    probe_ratio: float | None,
    constraints: Constraint | Sequence[Constraint | None] | None,
    max_frame: int = DEFAULT_MAX_FRAME,
    timeout: float | None = None,
) -> SubmitJob:
    """Validate a job and build its SubmitJob (ref set when sent). Raises ValueError/TypeError naming the bad argument."""
    if not payloads:
        raise ValueError("tasks must contain at least one task")
    if not isinstance(user, str):
        raise TypeError(f"user must be a str, got {type(user).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {type(priority).__name__}")
    job_constraint, task_constraints = None, None
    if isinstance(constraints, Constraint):
        job_constraint = _normalise(constraints)
    elif constraints is not None:
        task_constraints = list(constraints)
        if len(task_constraints) != len(payloads):
            raise ValueError(
                f"constraints has {len(task_constraints)} entries for {len(payloads)} tasks (one per task, or one Constraint)"
            )
        for i, c in enumerate(task_constraints):
            if c is not None and not isinstance(c, Constraint):
                raise TypeError(f"constraints[{i}] must be a Constraint or None, got {type(c).__name__}")
        task_constraints = [None if c is None else _normalise(c) for c in task_constraints]
    problem = job_problem(len(payloads), user, priority, probe_ratio, job_constraint, task_constraints, timeout)
    if problem is not None:
        raise ValueError(problem)
    size = sum(len(p) for p in payloads) + FRAME_OVERHEAD_PER_TASK * len(payloads) + FRAME_OVERHEAD_PER_JOB
    if size > max_frame:
        raise ValueError(
            f"the job's tasks take about {size} bytes, over the frame limit of {max_frame} bytes: submit fewer or smaller tasks"
        )
    return SubmitJob(0, payloads, user, priority, None if probe_ratio is None else float(probe_ratio),
                     job_constraint, task_constraints, None if timeout is None else float(timeout))  # fmt: skip


def _normalise(c: Constraint) -> Constraint:
    nodes, labels = c.node_monitors, c.labels
    if isinstance(nodes, str) or isinstance(labels, str):
        raise TypeError("Constraint.node_monitors and .labels must be sequences of str, not a str")
    return Constraint(tuple(str(n) for n in nodes), tuple(str(label) for label in labels))
