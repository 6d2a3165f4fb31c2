"""The client's decisions, sans-I/O (no trio, no sockets, no threads), as services/scheduler_logic.py:
job state, placement, retries, relaunch on failover, cancel, close, and the one dependency engine.

Its shell (core.py, under Client and SparrowExecutor) tells it what happened: a job added, a batch of
messages from the scheduler, a connection made or lost with the time, a cancel, the close. Each call
returns the messages to send; the outcomes it decided are taken with `take_events()`, each a
`(job, task)` whose outcome is now in `job.outcomes[task]` (an Outcome, as the scheduler sent it or
as decided here). Placement: the tasks added or made ready in one pass (the shell flushes once after
it) go as one SubmitJob per job (one per request, for a job whose tasks ask for different resources:
each keeps its own through retries, failover and recompute), and jobs marked `coalesce` with the same
settings share one.

Rules (docs/runtime-limits.md, "Limits and failure behaviour", and docs/runtime-dask.md, "Dependencies and Dask"):
- a system failure (SYSTEM) is retried, a task's own exception only with `retry_exceptions`; a task is
  launched at most `retries + 1` times, and a cancelled one is never retried;
- the scheduler lost: every task without an outcome that has attempts left is relaunched on the next
  connection (at-least-once); one with none left fails, naming the lost scheduler;
- no scheduler reachable: every task without an outcome fails (SYSTEM);
- cancel: a task no scheduler holds ends cancelled at once, one that a scheduler holds once it
  confirms; the tasks that take its result are cancelled at once;
- a task whose input failed does not run and fails with DependencyFailed naming the input; one
  whose input was cancelled is cancelled;
- close: every task without an outcome ends cancelled, and every value held at node monitors is released;
- values (values.py): a result kept at its node monitor is held while its owner lives (`forget` ends
  that) and by each dependent task that takes it until that task ends, then released (the shell sends
  `values.take()`); a dependent whose input was lost (LOST_INPUT) gets that input recomputed from the
  call of the task that made it (lineage, once per lost value, within its own attempts), then is placed
  again; if the recompute fails, or the call is not known, it fails with DependencyFailed naming the lost
  input (ValueLost); a value whose fetch failed is recomputed the same way when the shell asks
  (`recompute`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import cast

import cloudpickle
import msgspec

from ..errors import ProtocolError, ValueLost
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.limits import MAX_PREFERRED_NODES, MAX_PREFERRED_PER_JOB, MAX_REASON, MESSAGE_OVERHEAD, clip, too_large
from ..wire.messages import (
    CANCELLED,
    LOST_INPUT,
    SYSTEM,
    TOO_LARGE,
    UNPLACEABLE,
    CancelJob,
    Heartbeat,
    JobAccepted,
    JobRejected,
    Outcome,
    OutcomeToClient,
    OutputToClient,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TasksReply,
    TasksRequest,
    TaskStarted,
    ValueRef,
)
from .dependencies import Dependencies, Settler, Waiting, dependency_failed
from .job import Job, oversize_problem, split_jobs
from .output import OutputCallback
from .task_inputs import Inputs, pack_dependent
from .values import ValueBook

TaskKey = tuple[Job, int]  # a task of a job: the dependency engine's name for it
Held = dict[int, tuple[bytes, Inputs]]  # task -> its call with Slots and its inputs, each a TaskKey


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


class Placement:
    """The tasks one SubmitJob carries: task i of the placement is `tasks[i]` of `jobs[i]`."""

    __slots__ = ("jobs", "members", "tasks")

    def __init__(self, jobs: list[Job], tasks: list[int], members: list[Job]) -> None:
        self.jobs = jobs
        self.tasks = tasks
        self.members = members  # the distinct jobs, in order


def local_outcome(reason: str, failure: int) -> Outcome:
    """An outcome decided by the client (no task ran for it)."""
    return Outcome(False, b"", reason, failure)


class ClientLogic:
    """The jobs of one client and their tasks' way to exactly one outcome each."""

    def __init__(self, *, max_frame: int = DEFAULT_MAX_FRAME, on_output: OutputCallback | None = None) -> None:
        self.max_frame = max_frame
        self.on_output = on_output  # called with each attempt's output as it arrives (output.py; None: kept only)
        self.frame_limit = max_frame  # the link's: the smaller of max_frame and its scheduler's (`connected`)
        self.connected_to: str | None = None
        self.failovers: list[Failover] = []
        self.unfinished = 0  # tasks without an outcome
        self.closed = False
        # answers to StatusRequest and TasksRequest (the scheduler answers in order), taken by the shell in order
        self.query_replies: list[StatusReply | TasksReply] = []
        self._jobs: dict[Job, None] = {}  # unfinished, in submission order
        self._placements: dict[int, Placement] = {}  # ref -> what it carries, while the scheduler holds it
        self._next_ref = 1
        self._queue: dict[object, list[tuple[Job, list[int]]]] = {}  # to place at the next flush, by placement
        self._events: list[tuple[Job, int]] = []
        self._deps: Dependencies[TaskKey] = Dependencies()  # held tasks, by input
        self._settle = Settler(self._settle_one)
        self._queries = 0
        self.uploads: list[Job] = []  # upload jobs (Client.scatter) for the shell to upload, taken by take_uploads
        self.values = ValueBook()
        self.recomputed = 0  # lost values recomputed from their task's call
        # a lost value's key -> (the job recomputing it, the job and task that made it, [(dependent job, task, input)])
        self._recomputing: dict[bytes, tuple[Job, Job, int, list[tuple[Job, int, int]]]] = {}
        self._recompute_of: dict[Job, bytes] = {}  # recomputing job -> the lost value's key
        # bytes of task payloads sent and of outcomes (payload and error text) received: the data
        # that passes through this client (bytes_sent, bytes_received)
        self.traffic: Counter[str] = Counter()

    # -- what the shell asks -----------------------------------------------------------------------

    @property
    def unfinished_jobs(self) -> int:
        """How many submitted jobs have a task without an outcome."""
        return len(self._jobs)

    @property
    def queued(self) -> bool:
        """Whether tasks wait for the next `flush`."""
        return bool(self._queue)

    def take_events(self) -> list[tuple[Job, int]]:
        """The `(job, task)` pairs whose outcome was decided since the last call, in order."""
        events, self._events = self._events, []
        return events

    def add(self, job: Job, held: Held | None = None) -> None:
        """A new job; `held`: its tasks that wait for other tasks' outcomes. Its other tasks are placed
        at the next `flush` (or relaunched once connected)."""
        if self.closed:
            for task in range(job.n_tasks):
                self._end(job, task, local_outcome("the client is closed", SYSTEM))
            return
        self._jobs[job] = None
        self.unfinished += job.n_tasks
        if job.upload:  # the shell uploads its value itself (never placed, nor relaunched: held)
            job.hold((0,))
            self.uploads.append(job)
            return
        if not held:
            self._enqueue(job, list(range(job.n_tasks)))
            return
        job.hold(held)
        known: dict[TaskKey, None] = {}
        for task, (template, inputs) in held.items():
            self._deps.wait((job, task), template, inputs)
            for key in inputs.keys:
                if key[0].outcomes[key[1]] is not None:
                    known[key] = None
        placeable = [t for t in range(job.n_tasks) if t not in held]
        if placeable:
            self._enqueue(job, placeable)
        for key in known:
            if self._deps.awaited(key):
                self._settle(key, False)

    def flush(self) -> list[SubmitJob]:
        """The SubmitJobs of what waits to be placed (nothing while not connected: relaunched then)."""
        if self.connected_to is None or not self._queue:
            return []
        queue, self._queue = self._queue, {}
        msgs: list[SubmitJob] = []
        limit = self.frame_limit - MESSAGE_OVERHEAD  # the largest payload that fits the link
        for entries in queue.values():
            jobs: list[Job] = []
            tasks: list[int] = []
            payloads: list[bytes] = []
            sizes: list[int] = []
            for job, some in entries:  # comprehensions, not appends per task: the submit path
                outcomes, job_payloads = job.outcomes, job.payloads
                some = [task for task in some if outcomes[task] is None]  # not cancelled meanwhile
                sent = cast("list[bytes]", [job_payloads[task] for task in some])  # cleared only with their outcome
                lengths = list(map(len, sent))
                if lengths and max(lengths) > limit:
                    fit = [i for i, size in enumerate(lengths) if size <= limit]
                    for i, size in enumerate(lengths):
                        if size > limit:
                            self._too_large(job, some[i], size)
                    some, sent, lengths = [some[i] for i in fit], [sent[i] for i in fit], [lengths[i] for i in fit]
                jobs += [job] * len(some)
                tasks += some
                payloads += sent
                sizes += lengths
            for group in split_jobs(sizes, self.frame_limit) if tasks else ():
                msgs.append(  # noqa: PERF401 (the submit path: as it was measured, no generator frame per flush)
                    self._place(
                        jobs[group.start : group.stop],
                        tasks[group.start : group.stop],
                        payloads[group.start : group.stop],
                    )
                )
        return msgs

    def on_messages(self, msgs: list) -> list:
        """A batch from the scheduler; returns what to send (the retries, placed together).

        Error handling: ProtocolError for a message a scheduler may not send (the connection ends).
        """
        placements = self._placements
        for msg in msgs:
            kind = type(msg)
            if kind is OutcomeToClient:
                placement = placements.get(msg.ref)
                if placement is None:
                    raise ProtocolError(f"outcome for job ref {msg.ref}, which this client does not wait for")
                if msg.task >= len(placement.tasks):
                    raise ProtocolError(f"outcome for task {msg.task} of a job of {len(placement.tasks)} tasks")
                if msg.last:
                    del placements[msg.ref]
                job = placement.jobs[msg.task]
                task = placement.tasks[msg.task]
                self.traffic["bytes_received"] += len(msg.outcome.payload) + len(msg.outcome.error)
                if job.outcomes[task] is not None:
                    continue  # cancelled here before the scheduler heard
                outcome = msg.outcome
                failure = outcome.failure
                if failure == LOST_INPUT:
                    if not self._recompute(job, task, outcome):
                        self._lost_input(job, task, outcome)
                    continue
                if (
                    (failure == SYSTEM or (failure == 0 and not outcome.ok and job.retry_exceptions))
                    and job.attempts[task] <= job.retries
                    and task not in job.cancelled_tasks
                ):
                    job.ref[task] = 0
                    self._enqueue(job, [task])
                    continue
                self._end(job, task, outcome)
            elif kind is TaskStarted:
                placement = placements.get(msg.ref)
                if placement is not None and msg.task < len(placement.tasks):
                    job = placement.jobs[msg.task]
                    if job.started is not None:
                        job.started[placement.tasks[msg.task]] = 1
            elif kind is JobAccepted:
                placement = placements.get(msg.ref)
                if placement is not None:
                    for job in placement.members:
                        if job.job_id is None:
                            job.job_id = msg.job_id
            elif kind is OutputToClient:  # after the messages every job gets: only a task that printed sends it
                self._printed(msg)
            elif kind is JobRejected:
                placement = placements.pop(msg.ref, None)
                if placement is not None:
                    outcome = local_outcome(
                        f"the scheduler rejected the job: {clip(msg.reason, MAX_REASON)}", UNPLACEABLE
                    )
                    for job, task in zip(placement.jobs, placement.tasks, strict=True):
                        if job.outcomes[task] is None:
                            self._end(job, task, outcome)
            elif kind is StatusReply or kind is TasksReply:
                if not self._queries:
                    raise ProtocolError(f"{kind.__name__} without a request")
                self._queries -= 1
                self.query_replies.append(msg)
            elif kind is not Heartbeat:
                raise ProtocolError(f"{kind.__name__} is not allowed from a scheduler")
        return self.flush() if self._queue else []

    def cancel(self, job: Job, tasks: list[int] | None = None, force: bool = False) -> list[CancelJob]:
        """Cancel `tasks` (None: all) of `job`: those no scheduler holds end cancelled now, the others
        once the scheduler confirms (the CancelJobs returned); the tasks that take their results now."""
        if tasks is None:
            job.cancelled = True
            tasks = list(range(job.n_tasks))
        job.cancel_tasks(tasks)
        by_ref = self._cancel_here(job, tasks, settle_held=True)
        return [
            CancelJob(ref, force, None if len(local) == len(self._placements[ref].tasks) else sorted(local))
            for ref, local in by_ref.items()
        ]

    def cancel_pending(self, job: Job, tasks: list[int]) -> list[CancelJob]:
        """Cancel those of `tasks` of `job` that have not started: the ones no scheduler holds end cancelled
        now, the scheduler cancels the others it has not handed out (CancelJob.pending_only, returned) and
        lets the rest run to their outcomes."""
        by_ref = self._cancel_here(job, tasks, settle_held=False)
        return [CancelJob(ref, False, sorted(local), True) for ref, local in by_ref.items()]

    def _cancel_here(self, job: Job, tasks: list[int], settle_held: bool) -> dict[int, list[int]]:
        """End cancelled now those of `tasks` of `job` without an outcome that no scheduler holds; the others by
        the ref of the placement holding them, as its own task indexes (for the CancelJob). `settle_held`: those
        held are cancelled whatever they do, so what waits on them is settled now."""
        by_ref: dict[int, list[int]] = {}
        for task in tasks:
            if not 0 <= task < job.n_tasks or job.outcomes[task] is not None:
                continue
            ref = job.ref.get(task, 0)
            if ref in self._placements:
                by_ref.setdefault(ref, []).append(job.at[task])
                if settle_held and self._deps.awaited((job, task)):
                    self._settle((job, task), True)
            else:
                job.cancel_tasks((task,))
                self._end(job, task, local_outcome("cancelled by its client", CANCELLED))
        return by_ref

    def status_request(self) -> StatusRequest:
        """A StatusRequest to send (its reply comes to `query_replies`)."""
        self._queries += 1
        return StatusRequest()

    def tasks_request(self, request: TasksRequest) -> TasksRequest:
        """`request` (a TasksRequest) to send: its reply comes to `query_replies`."""
        self._queries += 1
        return request

    # -- the connection ----------------------------------------------------------------------------

    def connected(self, scheduler: str, now: float, frame_limit: int | None = None) -> list[SubmitJob]:
        """Connected to `scheduler` at `now`: every task without an outcome that waits for no input is
        (re)launched there, as one placement per job. `frame_limit`: the scheduler's max_frame, told at
        the handshake; nothing sent is over it (a task over it alone fails, TOO_LARGE)."""
        self.connected_to = scheduler
        self.frame_limit = self.max_frame if frame_limit is None else min(self.max_frame, frame_limit)
        self._queue.clear()
        for job in self._jobs:
            pending = self._pending(job)
            if pending:
                self._enqueue(job, pending)
        msgs = self.flush()
        if self.failovers and self.failovers[-1].connected_at is None:
            record = self.failovers[-1]
            record.connected_at, record.to = now, scheduler
            record.relaunched = sum(len(m.tasks) for m in msgs)
        return msgs

    def lost(self, reason: str, now: float) -> None:
        """The scheduler is gone with every placement it held: what may be relaunched waits for the
        next connection; what used all its attempts fails, a cancelled task ends cancelled."""
        scheduler = self.connected_to or "?"
        self.connected_to = None
        self.failovers.append(Failover(scheduler, reason, now))
        self._placements.clear()
        self._queue.clear()
        self._queries = 0
        why = f"scheduler {scheduler} was lost ({clip(reason, MAX_REASON)})"
        for job in list(self._jobs):
            for task in self._pending(job):
                attempts = job.attempts[task]
                if task in job.cancelled_tasks:
                    self._end(job, task, local_outcome("cancelled by its client", CANCELLED))
                elif attempts > job.retries:
                    reason = f"{why} (after {attempts} attempt{'s' * (attempts > 1)})"
                    self._end(job, task, local_outcome(reason, SYSTEM))

    def unreachable(self, reason: str) -> None:
        """No scheduler could be reached: every task without an outcome fails with `reason`."""
        self._end_all(local_outcome(reason, SYSTEM))

    def close(self, reason: str = "the client was closed") -> list[CancelJob]:
        """The client closes: every task without an outcome ends cancelled; returns the CancelJobs
        that tell the scheduler, if one is connected."""
        self.closed = True
        msgs = [CancelJob(ref) for ref in self._placements] if self.connected_to is not None else []
        self._placements.clear()
        self._end_all(local_outcome(reason, CANCELLED))
        self.values.release_all()
        return msgs

    def take_uploads(self) -> list[Job]:
        """The upload jobs added since the last call (`job.upload`: the shell uploads each one's payload)."""
        jobs, self.uploads = self.uploads, []
        return jobs

    def uploaded(self, job: Job, result: ValueRef | BaseException) -> None:
        """An upload job (added, then taken by the shell) has its outcome: the value's reference, or the
        exception of a failed upload. The value is then held as a task's result is (by its owner, and by the
        dependents that take it); the job's payload, if it still has one (Client.scatter's `keep`), is its
        lineage: the bytes to upload again should the value be lost with its node monitor."""
        if job.outcomes[0] is not None:
            return  # ended meanwhile (the client closed)
        if isinstance(result, BaseException):
            job.errors[0] = result
            self._end(job, 0, local_outcome(str(result), SYSTEM))
        else:
            self._end(job, 0, Outcome(True, ref=result))

    def forget(self, job: Job, task: int) -> None:
        """The owner of task `task`'s outcome (a future, a JobHandle) is gone: its value may be released."""
        outcome = job.outcomes[task]
        if outcome is None:
            job.disown(task)  # its value is released once the tasks that take it are done with it
        elif outcome.ref is not None:
            self.values.drop(outcome.ref)

    # -- inside ----------------------------------------------------------------------------------

    @staticmethod
    def _pending(job: Job) -> list[int]:
        """The tasks of `job` without an outcome that wait for no input."""
        outcomes, held = job.outcomes, job.held
        return [t for t in range(job.n_tasks) if outcomes[t] is None and t not in held]

    def _enqueue(self, job: Job, tasks: list[int]) -> None:
        if job.task_resources is not None:
            self._enqueue_by_request(job, tasks)
            return
        s = job.settings
        if job.coalesce:
            asked = None if s.resources is None else tuple(sorted(s.resources.items()))
            key: object = (s.user, s.priority, s.probe_ratio, s.constraint, s.timeout, s.sampling, asked)
        else:
            key = job
        entries = self._queue.get(key)
        if entries is None:
            self._queue[key] = [(job, tasks)]
        else:
            entries.append((job, tasks))

    def _enqueue_by_request(self, job: Job, tasks: list[int]) -> None:
        """Tasks of a job whose tasks ask for different resources: one placement per request (each
        still batch-sampled), in task order within it."""
        assert job.task_resources is not None
        groups: dict[tuple[tuple[str, int], ...] | None, list[int]] = {}
        for task in tasks:
            request = job.task_resources[task]
            asked = None if request is None else tuple(sorted(request.items()))
            groups.setdefault(asked, []).append(task)
        for asked, some in groups.items():
            self._queue.setdefault((job, asked), []).append((job, some))

    def _place(self, jobs: list[Job], tasks: list[int], payloads: list[bytes]) -> SubmitJob:
        """One placement: one more attempt for each task."""
        ref = self._next_ref
        self._next_ref += 1
        first = jobs[0]
        members = list(dict.fromkeys(jobs))
        if len(members) == 1:  # a job's own placement (a map's chunk): its dicts updated whole
            attempts = first.attempts
            for task in tasks:
                attempts[task] += 1
            first.ref.update(dict.fromkeys(tasks, ref))
            first.at.update(zip(tasks, range(len(tasks))))
        else:
            for i, (job, task) in enumerate(zip(jobs, tasks, strict=True)):
                job.attempts[task] += 1
                job.ref[task] = ref
                job.at[task] = i
        s = first.settings
        task_constraints = s.task_constraints  # only a job of its own has them (coalesced jobs have none)
        if task_constraints is not None and len(tasks) != first.n_tasks:
            task_constraints = [task_constraints[t] for t in tasks]
        self._placements[ref] = Placement(jobs, tasks, members)
        self.traffic["bytes_sent"] += sum(map(len, payloads))
        return SubmitJob(
            ref,
            payloads,
            s.user,
            s.priority,
            s.probe_ratio,
            s.constraint,
            task_constraints,
            s.timeout,
            _placement_prefer(jobs, tasks, members),
            s.sampling,
            s.resources if first.task_resources is None else first.task_resources[tasks[0]],
            s.report_started,
        )

    def _too_large(self, job: Job, task: int, size: int) -> None:
        """Task `task` of `job` is over the link's frame limit by itself: it fails alone, once."""
        job.attempts[task] += 1
        where = f"of the link to scheduler {self.connected_to}"
        problem = too_large("the task's payload", size, self.frame_limit, where)
        assert problem is not None  # the caller found it over the limit
        self._end(job, task, local_outcome(problem, TOO_LARGE))

    def _printed(self, msg: OutputToClient) -> None:
        """What a task printed, just before its outcome: kept with its job (the last attempt's), and handed to
        `on_output`. Error handling: ProtocolError for a job or task this client does not wait for."""
        placement = self._placements.get(msg.ref)
        if placement is None or msg.task >= len(placement.tasks):
            raise ProtocolError(f"output for job ref {msg.ref} task {msg.task}, which this client does not wait for")
        job, task = placement.jobs[msg.task], placement.tasks[msg.task]
        self.traffic["output_received"] += len(msg.output.stdout) + len(msg.output.stderr)
        if job.outputs is None:
            job.outputs = {}
        job.outputs[task] = msg.output
        if self.on_output is not None:
            self.on_output(job.job_id, task, msg.output)

    def _end(self, job: Job, task: int, outcome: Outcome) -> None:
        """Task `task` of `job` has its one outcome."""
        job.outcomes[task] = outcome
        ref = outcome.ref
        if ref is None:
            job.payloads[task] = None
        elif job not in self._recompute_of:  # the payload stays: its call, should the value be lost
            self.values.keep(ref, job, task)
        job.order.append(task)
        job.n_done += 1
        self.unfinished -= 1
        if job.n_done == job.n_tasks:
            self._jobs.pop(job, None)
        self._events.append((job, task))
        if job.calls and task in job.calls:  # a dependent: done with its inputs
            for value in job.calls.pop(task).values:
                if type(value) is ValueRef:
                    self.values.drop(value)
        if self._recompute_of and job in self._recompute_of:
            self._recomputed(job, outcome)
        if job.held and task in job.held:
            job.unhold(task)
            self._deps.drop((job, task))
        if self._deps and self._deps.awaited((job, task)):
            self._settle((job, task), False)
        elif ref is not None and task in job.unowned:
            self.values.drop(ref)

    def _end_all(self, outcome: Outcome) -> None:
        self._queue.clear()
        for job in list(self._jobs):
            for task in range(job.n_tasks):
                if job.outcomes[task] is None:
                    self._end(job, task, outcome)

    def _fail(self, job: Job, task: int, exc: BaseException, error: str) -> None:
        """End `task` with `exc`, decided here (`error`: the text its outcome carries)."""
        if job.outcomes[task] is None:
            job.errors[task] = exc
            self._end(job, task, Outcome(False, cloudpickle.dumps(exc), error or str(exc)))

    def _settle_one(self, key: tuple[Job, int], cancelled: bool) -> None:
        """Input `key` ended (or, `cancelled`, was cancelled): what waits for it is ready, fails or is cancelled."""
        job, task = key
        outcome = job.outcomes[task]
        if not cancelled and outcome.ok:
            ref = outcome.ref
            for waiting in self._deps.done(key, outcome.payload if ref is None else ref):
                self._ready(waiting)
            if ref is not None and task in job.unowned:  # the dependents hold it now
                self.values.drop(ref)
        elif cancelled or outcome.failure == CANCELLED:
            for waiting, path in self._deps.failed(key):
                target, index = waiting.target
                if target.outcomes[index] is None:
                    target.cancel_tasks((index,))
                    self._end(target, index, local_outcome(f"cancelled: its input {path} was cancelled", CANCELLED))
        else:
            upstream = job.exception(task)
            for waiting, path in self._deps.failed(key):
                self._fail(*waiting.target, dependency_failed(path, upstream), outcome.error)

    def _ready(self, waiting: Waiting[TaskKey]) -> None:
        """A held task has all its inputs: its payload is made now, and it is placed at the next flush."""
        job, task = waiting.target
        if job.outcomes[task] is not None:
            return
        values = waiting.all_values()
        payload = pack_dependent(waiting.template, values, job.code)
        problem = oversize_problem(len(payload), self.max_frame)
        if problem is not None:
            self._fail(job, task, ValueError(problem), problem)
            return
        waiting.values[:] = values  # the same inputs, none missing
        for value in values:
            if type(value) is ValueRef:
                self.values.hold(value)
        _prefer_holders(job, task, values)
        job.calls[task] = waiting
        job.payloads[task] = payload
        job.unhold(task)
        self._enqueue(job, [task])

    def _recompute(self, job: Job, task: int, outcome: Outcome) -> bool:
        """Dependent `task` of `job` lost inputs (LOST_INPUT): recompute each from the call of the task
        that made it, and place the dependent again once all are back. False if that cannot be done (no
        attempt left, a lost value whose call is not known): the outcome then stands."""
        waiting = job.calls.get(task)
        if waiting is None or job.attempts[task] > job.retries or task in job.cancelled_tasks:
            return False
        try:
            lost = msgspec.msgpack.decode(outcome.payload, type=list[bytes])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        plan = []
        for key in lost:
            index = next((i for i, v in enumerate(waiting.values) if type(v) is ValueRef and v.key == key), None)
            producer = self.values.maker(key) or self._recomputing.get(key, (None, None, None))[1:3]
            if index is None or producer[0] is None:
                return False
            pjob, ptask = producer
            if pjob.payloads[ptask] is None:
                return False
            plan.append((key, index, pjob, ptask))
        job.ref[task] = 0
        job.hold((task,))  # not relaunched on a failover while it waits
        for key, index, pjob, ptask in plan:
            self.values.forget(waiting.values[index])
            entry = self._recomputing.get(key)
            if entry is None:
                rjob = _lineage_job(pjob, ptask)
                entry = self._recomputing[key] = (rjob, pjob, ptask, [])
                self._recompute_of[rjob] = key
                self.recomputed += 1
                self.add(rjob)
            entry[3].append((job, task, index))
            waiting.missing += 1
        return True

    def recompute(self, job: Job, task: int) -> tuple[Job | None, bool]:
        """Task `task` of `job` ended with a value that is lost (its fetch failed): the job of one task
        that recomputes it from its call, and whether it is new (the caller adds it); one already
        recomputing it, and False; or (None, False) if its call is not known. Its outcome replaces the
        task's once it ends."""
        ref = job.outcomes[task].ref
        if ref is None:
            return None, False
        entry = self._recomputing.get(ref.key)
        if entry is not None:
            return entry[0], False
        payload = job.payloads[task]
        if payload is None:
            return None, False
        rjob = _lineage_job(job, task)
        self._recomputing[ref.key] = (rjob, job, task, [])
        self._recompute_of[rjob] = ref.key
        self.values.forget(ref)
        self.recomputed += 1
        return rjob, True

    def _lost_input(self, job: Job, task: int, outcome: Outcome) -> None:
        """Dependent `task` of `job` lost an input that cannot be recomputed: it fails with DependencyFailed
        naming the input and why it was lost."""
        waiting = job.calls.get(task)
        lost = ValueLost(outcome.error)
        path = "an input"
        if waiting is not None:
            try:
                keys = msgspec.msgpack.decode(outcome.payload, type=list[bytes])
            except (msgspec.DecodeError, msgspec.ValidationError):
                keys = []
            where = [i for i, v in enumerate(waiting.values) if type(v) is ValueRef and v.key in keys]
            if where:
                path = waiting.paths[where[0]]
        self._fail(job, task, dependency_failed(path, lost), outcome.error)

    def _recomputed(self, rjob: Job, outcome: Outcome) -> None:
        """A lost value's recompute ended: its dependents are placed again with the new value, or fail."""
        key = self._recompute_of.pop(rjob)
        _, pjob, ptask, waiters = self._recomputing.pop(key)
        if outcome.ok:
            pjob.outcomes[ptask] = outcome  # its owner's result() takes the new one
            value = outcome.payload if outcome.ref is None else outcome.ref
            if outcome.ref is not None:
                self.values.keep(outcome.ref, pjob, ptask)
        for job, task, index in waiters:
            waiting = job.calls.get(task)
            if job.outcomes[task] is not None or waiting is None:
                continue
            if not outcome.ok:
                path = waiting.paths[index]
                lost = ValueLost(f"its value was lost with its node monitor and recomputing it failed: {outcome.error}")
                self._fail(job, task, dependency_failed(path, lost), str(lost))
                continue
            waiting.values[index] = value
            if type(value) is ValueRef:
                self.values.hold(value)
            waiting.missing -= 1
            if not waiting.missing:
                _prefer_holders(job, task, waiting.values, again=True)
                job.payloads[task] = pack_dependent(waiting.template, waiting.values, job.code)
                job.unhold(task)
                self._enqueue(job, [task])


def _lineage_job(job: Job, task: int) -> Job:
    """The job of one task that makes task `task`'s value of `job` again (with that task's own request):
    its call, or its upload."""
    payload = job.payloads[task]
    assert payload is not None  # the callers checked: its call or bytes are known
    settings = _one_task(job.settings, task)
    if job.task_resources is not None:
        settings = msgspec.structs.replace(settings, resources=job.task_resources[task])
    rjob = Job(settings, [payload], retries=job.retries)
    rjob.upload = job.upload
    return rjob


def _one_task(settings: SubmitJob, task: int) -> SubmitJob:
    """The settings of a job for task `task` of a job with `settings` alone (its own constraint and
    preference, if its job has per-task ones)."""
    constraints, prefer = settings.task_constraints, settings.task_prefer
    return msgspec.structs.replace(
        settings,
        task_constraints=None if constraints is None else [constraints[task]],
        task_prefer=None if prefer is None else [prefer[task]],
    )


def _prefer_holders(job: Job, task: int, values: list, again: bool = False) -> None:
    """Place dependent `task` of `job` toward the node monitors holding its referenced inputs, those with
    the most of their bytes first (SubmitJob.task_prefer: soft), unless its job names its own preference
    (`again`: its inputs changed after a recompute, so the last one set here is replaced)."""
    held: dict[str, int] = {}
    for value in values:
        if type(value) is ValueRef:
            held[value.node_id] = held.get(value.node_id, 0) + value.size
    if not held:
        return
    prefer = job.settings.task_prefer
    if prefer is not None and prefer[task] and not again:
        return
    prefer = [()] * job.n_tasks if prefer is None else list(prefer)
    prefer[task] = tuple(sorted(held, key=held.__getitem__, reverse=True)[:MAX_PREFERRED_NODES])
    job.settings = msgspec.structs.replace(job.settings, task_prefer=prefer)


def _placement_prefer(jobs: list[Job], tasks: list[int], members: list[Job]) -> list[tuple[str, ...]] | None:
    """SubmitJob.task_prefer of a placement: task i's entry is `tasks[i]`'s of `jobs[i]`; None when none
    of its jobs prefers a node monitor. A placement of coalesced jobs keeps their preferences until
    they name MAX_PREFERRED_PER_JOB ids together; the tasks past that go without one (a preference is
    soft: it places a task, it never decides whether it runs)."""
    if all(job.settings.task_prefer is None for job in members):
        return None
    out: list[tuple[str, ...]] = []
    total = 0
    for job, task in zip(jobs, tasks, strict=True):
        prefer = job.settings.task_prefer
        nodes = () if prefer is None else prefer[task]
        total += len(nodes)
        out.append(nodes if total <= MAX_PREFERRED_PER_JOB else ())
    return out if any(out) else None
