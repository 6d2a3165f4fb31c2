"""The async client: submit jobs of Python callables to a scheduler and collect their outcomes.

    async with Client(["127.0.0.1:7077"], secret=...) as client:
        job = await client.submit_job([partial(f, x) for x in xs], user="alice")
        values = await job.results()            # in task order; raises the first task's exception
        async for outcome in job.as_completed():  # or one by one, as they finish
            ...

Error handling: bad arguments raise ValueError/TypeError at submission, before anything is sent. A
task that raises has that exception re-raised by `TaskOutcome.result()` / `JobHandle.results()`
with the remote traceback as its `__cause__`. A task that got no result of its own (its executor
died, its node monitor was lost, the job was rejected, the connection to the scheduler was lost)
raises TaskFailed with the reason. Every task ends with exactly one outcome.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

import trio

from .address import Address, parse_address
from .auth import load_secret
from .connection import Connection
from .handshake import DEFAULT_HANDSHAKE_TIMEOUT, connect
from .errors import ConnectionLost, HandshakeError, ProtocolError
from .framing import DEFAULT_MAX_FRAME, check_max_frame
from .limits import job_problem
from .messages import Constraint, JobAccepted, JobRejected, StatusReply, StatusRequest, SubmitJob, TaskResult
from .task_codec import outcome_exception, pack_task, unpack_outcome

FRAME_OVERHEAD_PER_TASK = 16  # msgpack bytes around each task payload in SubmitJob, generously
DEFAULT_STATUS_TIMEOUT = 5.0

OutcomeCallback = Callable[[int, bool, bytes, str], None]


@dataclass(frozen=True)
class TaskOutcome:
    """The outcome of task `index` of a job: `ok` with its return value, or the exception it stands for."""

    index: int
    ok: bool
    value: object = None
    exception: BaseException | None = None

    def result(self):
        """The task's return value, or raise its exception."""
        if not self.ok:
            raise self.exception
        return self.value


class JobHandle:
    """A submitted job: its outcomes arrive as tasks finish."""

    def __init__(self, n_tasks: int, on_outcome: OutcomeCallback | None = None) -> None:
        self.job_id: int | None = None  # the scheduler's id, once it accepted the job
        self.n_tasks = n_tasks
        self._raw: list[tuple[bool, bytes, str] | None] = [None] * n_tasks
        self._order: list[int] = []
        self._n_done = 0
        self._changed = trio.Event()  # replaced after each wait: wakes as_completed per outcome
        self._finished = trio.Event()  # set once: wakes wait() once per job
        self._on_outcome = on_outcome

    def done(self) -> bool:
        return self._n_done == self.n_tasks

    def _set(self, task: int, ok: bool, payload: bytes, error: str) -> None:
        if not 0 <= task < self.n_tasks or self._raw[task] is not None:
            raise ProtocolError(f"scheduler sent a second or out-of-range outcome for task {task}")
        self._raw[task] = (ok, payload, error)
        self._order.append(task)
        self._n_done += 1
        self._changed.set()
        if self._n_done == self.n_tasks:
            self._finished.set()
        if self._on_outcome is not None:
            self._on_outcome(task, ok, payload, error)

    def _fail_rest(self, reason: str) -> None:
        for task, raw in enumerate(self._raw):
            if raw is None:
                self._set(task, False, b"", reason)

    def _outcome(self, task: int) -> TaskOutcome:
        ok, payload, error = self._raw[task]
        if ok:
            return TaskOutcome(task, True, unpack_outcome(ok, payload, error))
        return TaskOutcome(task, False, exception=outcome_exception(payload, error))

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


class Client:
    """A connection to a scheduler (the first reachable of `schedulers`, tried in random order)."""

    def __init__(
        self,
        schedulers: Sequence[str | Address],
        *,
        secret: str | bytes | None = None,
        secret_file: str | None = None,
        client_id: str | None = None,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        if isinstance(schedulers, str):
            schedulers = [schedulers]
        self.schedulers = [parse_address(a) for a in schedulers]
        if not self.schedulers:
            raise ValueError("schedulers must name at least one scheduler address")
        self._secret = load_secret(secret, secret_file)
        self.client_id = client_id or f"client-{uuid.uuid4().hex[:12]}"
        self.handshake_timeout = handshake_timeout
        self.max_frame = check_max_frame(max_frame)
        self._conn: Connection | None = None
        self._jobs: dict[int, JobHandle] = {}
        self._next_ref = 1
        self._lost: str | None = None
        self._stack: AsyncExitStack | None = None
        self._status_waiters: list[_StatusWaiter] = []  # in request order: replies come in order

    async def __aenter__(self) -> Client:
        errors = []
        for address in random.sample(self.schedulers, len(self.schedulers)):
            try:
                self._conn = await connect(
                    address,
                    secret=self._secret,
                    role="client",
                    peer_id=self.client_id,
                    timeout=self.handshake_timeout,
                    max_frame=self.max_frame,
                )
                break
            except (OSError, HandshakeError) as exc:
                errors.append(f"{address[0]}:{address[1]}: {exc}")
        else:
            raise ConnectionLost("no scheduler reachable: " + "; ".join(errors))
        self._stack = AsyncExitStack()
        nursery = await self._stack.enter_async_context(trio.open_nursery())
        nursery.start_soon(self._serve)
        return self

    async def __aexit__(self, *exc_info) -> None:
        self._conn.close_soon()
        await self._stack.__aexit__(*exc_info)

    async def _serve(self) -> None:
        reason = await self._conn.serve(self._on_messages)
        self._lost = self._lost or f"connection to scheduler {self._conn.peer_name} lost: {reason}"
        for handle in list(self._jobs.values()):
            handle._fail_rest(self._lost)
        self._jobs.clear()
        for waiter in self._status_waiters:
            waiter.event.set()
        self._status_waiters.clear()

    def _on_messages(self, msgs: list) -> None:
        jobs = self._jobs
        for msg in msgs:
            kind = type(msg)
            if kind is TaskResult:
                handle = jobs.get(msg.ref)
                if handle is None:
                    raise ProtocolError(f"outcome for job ref {msg.ref}, which this client does not wait for")
                handle._set(msg.task, msg.ok, msg.payload, msg.error)
                if handle.done():
                    del jobs[msg.ref]
            elif kind is JobAccepted:
                handle = jobs.get(msg.ref)
                if handle is not None:
                    handle.job_id = msg.job_id
            elif kind is JobRejected:
                handle = jobs.pop(msg.ref, None)
                if handle is not None:
                    handle._fail_rest(f"the scheduler rejected the job: {msg.reason}")
            elif kind is StatusReply:
                if not self._status_waiters:
                    raise ProtocolError("StatusReply without a StatusRequest")
                waiter = self._status_waiters.pop(0)
                waiter.reply = msg
                waiter.event.set()
            else:
                raise ProtocolError(f"{kind.__name__} is not allowed from a scheduler")

    async def submit_job(
        self,
        tasks: Iterable[Callable[[], object]],
        *,
        user: str = "",
        priority: int = 0,
        probe_ratio: float | None = None,
        constraints: Constraint | Sequence[Constraint | None] | None = None,
    ) -> JobHandle:
        """Submit a job of zero-argument callables (use functools.partial for arguments).

        `user` is the fair-share user, `priority` the level (lower runs first where node monitors use
        the priority policy), `probe_ratio` the probes per task (default: the scheduler's).
        `constraints`: one Constraint for the whole job, or one Constraint-or-None per task.
        """
        tasks = list(tasks)  # keeps every task alive, so no id below is reused by another object
        packed: dict[int, bytes] = {}  # id -> payload: a callable repeated in a job is pickled once
        payloads = []
        for task in tasks:
            payload = packed.get(id(task))
            if payload is None:
                payload = packed[id(task)] = pack_task(task)
            payloads.append(payload)
        msg = build_submit(payloads, user, priority, probe_ratio, constraints, self.max_frame)
        await trio.lowlevel.checkpoint()
        return self.send_job(msg)

    async def status(self, timeout: float = DEFAULT_STATUS_TIMEOUT) -> StatusReply:
        """What the scheduler knows: its node monitors (slots, labels, queue lengths, last heard
        from), its jobs in flight and its counters.

        Error handling: ConnectionLost if the connection is or gets lost; trio.TooSlowError if no
        answer comes within `timeout` seconds.
        """
        if self._conn is None or self._conn.closed or self._lost is not None:
            raise ConnectionLost(self._lost or "the client is not connected to a scheduler")
        waiter = _StatusWaiter()
        self._status_waiters.append(waiter)
        self._conn.send(StatusRequest())
        with trio.fail_after(timeout):
            await waiter.event.wait()
        if waiter.reply is None:
            raise ConnectionLost(self._lost or "the connection to the scheduler was lost")
        return waiter.reply

    def send_job(self, msg: SubmitJob, on_outcome: OutcomeCallback | None = None) -> JobHandle:
        """Send a job built by `build_submit` (synchronous: from trio code or `run_sync_soon`).

        `on_outcome(task, ok, payload, error)` (optional) is called as each outcome arrives.
        """
        handle = JobHandle(len(msg.tasks), on_outcome)
        if self._conn is None or self._conn.closed or self._lost is not None:
            handle._fail_rest(self._lost or "the client is not connected to a scheduler")
            return handle
        msg.ref = self._next_ref
        self._next_ref += 1
        self._jobs[msg.ref] = handle
        self._conn.send(msg)
        return handle


class _StatusWaiter:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.reply: StatusReply | None = None


def build_submit(
    payloads: list[bytes],
    user: str,
    priority: int,
    probe_ratio: float | None,
    constraints: Constraint | Sequence[Constraint | None] | None,
    max_frame: int = DEFAULT_MAX_FRAME,
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
    problem = job_problem(len(payloads), user, priority, probe_ratio, job_constraint, task_constraints)
    if problem is not None:
        raise ValueError(problem)
    size = sum(len(p) for p in payloads) + FRAME_OVERHEAD_PER_TASK * len(payloads) + 1024
    if size > max_frame:
        raise ValueError(
            f"the job's tasks take about {size} bytes, over the frame limit of {max_frame} bytes: submit fewer or smaller tasks"
        )
    return SubmitJob(0, payloads, user, priority, None if probe_ratio is None else float(probe_ratio),
                     job_constraint, task_constraints)  # fmt: skip


def _normalise(c: Constraint) -> Constraint:
    nodes, labels = c.node_monitors, c.labels
    if isinstance(nodes, str) or isinstance(labels, str):
        raise TypeError("Constraint.node_monitors and .labels must be sequences of str, not a str")
    return Constraint(tuple(str(n) for n in nodes), tuple(str(label) for label in labels))
