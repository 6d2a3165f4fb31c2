"""The node monitor's decisions, sans-I/O: messages and time in, `(peer, message)` pairs out. No sockets, no trio.

The reservation queue and its policy (fifo, priority, weighted fair) are the kernel's
`sparrow_core.ReservationQueue`; this class adds slot accounting and the mapping between the queue's
integer keys and `(scheduler, job id)` (job ids are only unique per scheduler).

A free slot pops a reservation and asks its scheduler for a task (GetTask); the slot stays held until
the answer. NoTask frees the slot, gives a fair-share user its turn back (`refund`) and pops the next
reservation at once. TaskToNode is passed on as an output addressed to the executor: the shell runs
it and calls `on_task_done` with its Outcome, which reports OutcomeToScheduler and frees the slot (tasks that
ended together, a worker's read: `on_task_ended` each, then `on_tasks_ended` once fills the slots and asks ahead).
StopTask (a forced cancel) becomes a `Stop` for the executor the same way: the shell stops that task
if its executor can.

Registration: the shell sends `registration(...)` to each scheduler it links to and gives the reply
to `on_registration_reply`, which takes the scheduler on (Registered), stops the node monitor
(RegistrationRefused: a configuration error, so it raises instead of retrying), or raises
ProtocolError (anything else: the shell closes that link and redials).

Pipelined late binding (`pipeline`, a mode of PIPELINE_MODES: off, gated, steady (the default), jit, always;
each a policy in pipeline/, over the kernel's rule): while every slot is busy and the queue holds reservations, the
node monitor also asks ahead: it pops a reservation and sends its GetTask without a slot, as many as the policy's
`limit` allows (one per running task, or `pipeline_depth` per slot held while the recent tasks ran short: requests
asked ahead in flight + tasks bound and waiting count against it). A TaskToNode answering such a request waits,
bound, until a slot frees, and then starts at once: the scheduler round trip between two tasks of a slot overlaps
the running task. A slot that frees with no bound task takes over a request asked ahead that is still in flight
(it waits for that answer) before it pops a new reservation. NoTask to a request asked ahead frees no slot. A bound
task is launched as far as its scheduler knows: a forced cancel (StopTask) of it reports its CANCELLED outcome at
once, and if this node monitor dies with it bound its scheduler fails it as SYSTEM like any running task. Its
timeout starts when it starts. The trade-off (docs/pipelining.md): a task bound ahead waits out the running task
even when a slot elsewhere frees first; with `pipeline_depth` d, out the d tasks before it. While deep, a slot that
asked for its task asks ahead with it (in the same write: a job's first tasks here cost one round trip, not two).
The half rule (gated modes, and any deep pipeline): at most half of what the node holds of the head job (its
requests asked ahead and its queued reservations) is asked ahead: under the default probe ratio of 2 that is about
its share of the job, and the rest waits for whichever of the job's probed workers frees first (without it, the
first of them to ask took all of a small job's tasks ahead: 9 of a 10-task job on 2 workers). Jit times its
requests: `ask_ahead_at` says when the shell should call `on_ask_ahead_timer`.

Handed ahead (`on_handed_ahead`, while `may_pin`: one slot, or short recent tasks): the shell may hand a bound
task to its executor at once, queued in a busy worker behind the running task, so that it starts there as that one ends
with no hop through the node monitor between them. A pinned task stays bound here (counted as bound) but
takes no slot that frees elsewhere: it launches when the executor says it started, in the slot of the task it
followed (`on_task_done`'s `started`), and its timeout starts then. If its worker dies first it never
started: `on_given_back` makes it an ordinary bound task again (no attempt counted). A forced cancel of it reports
CANCELLED at once as for any bound task, and a `Withdraw` tells the executor to drop it (or, if it had just
started, to stop it); so does its scheduler's loss.

Give-back (`give_back=True`, with a pipeline that asks ahead): a running task overruns once it has run
`overrun_after()` (GIVE_BACK_FACTOR x the longest of the recent run times, at least GIVE_BACK_MIN). At most
`pipeline_depth` bound tasks per running task that has not overrun may wait here; `on_give_back_timer` (the
shell calls it at `give_back_at()`) hands the others, latest first, back to their schedulers (GiveBack) and
forgets them: they never run here, and the scheduler gives each to the job's next GetTask (give_back.py). Nothing
is asked ahead behind overrun tasks (the ask-ahead limit counts the same tasks). A task handed to the executor
ahead (pinned) is never given back (its worker may start it at any moment), so with give-back tasks are handed
ahead only while the recent tasks ran short (`may_pin`). A lost scheduler takes its bound tasks with it: nothing
is given back to it.

Tasks sent unasked (TaskToNode.bound, `_take_bound`): a scheduler that believes this node monitor idle sends a
job's first tasks with its reservations instead of waiting for GetTask. Each is bound as on arrival: it starts in
the next free slot (at once if one is free), ahead of the queue, and is otherwise a bound task as above (a forced
cancel reports CANCELLED at once; this node monitor's death fails it at its scheduler as SYSTEM). At most
`slots` x (MAX_PIPELINE_DEPTH + 1) tasks wait bound here; one more is a protocol error.

Timers: a task launched with a timeout (its job's, TaskToNode.timeout) is stopped once it runs past
it: `on_timer()`, called by the shell every so often, returns a `Stop` (TIMED_OUT) for each such task
(`clock` tells the time: tests pass a fake one).

Values: with a `store` (data/store.py), a result over `inline_limit` bytes stays here and its outcome
carries a reference (`holder`: this node monitor's id and data address) instead of the value; it is
tagged with the user and client session of its job (EnqueueReservations), and a ReleaseSession drops
that session's values. A full store fails the outcome (TOO_LARGE, the reason naming the sizes).

Outcomes: `on_task_done` reports the task's Outcome as is, unless it would not fit in a frame of
its scheduler's link (the smaller of `max_frame` and the scheduler's, given at registration): then a
failed outcome (TOO_LARGE, not retried) naming its size and the limit goes instead, and the link stays.

`drain()` (for a clean shutdown) drops the queued reservations and takes no more (later ones are
dropped on arrival), and tells every scheduler (a Heartbeat with `draining`), which then stops
probing this node monitor and re-probes the jobs whose reservations were here. The tasks already
launched or asked for run to the end and report; once `busy` is 0 the shell can close its links.

Work stealing (`steal=True`; steal_logic.py, the collaborator `stealing` over this class's StealHost face): the
schedulers tell
the peers (StealPeers); an idle node monitor takes reservations of stealable jobs from a peer's queue,
asks their scheduler for them naming the peer as their origin, and releases them to the peer once
answered; the peer keeps them lent until then and takes them back if the link to the thief ends.

Error handling: a message a scheduler may not send, or reservations past MAX_QUEUED_RESERVATIONS,
are answered with Error, which closes that link; the messages of its batch before it keep their
effects and outputs (a TaskToNode before a bad NoTask still runs its task and frees its slot after).
Answers about a scheduler that is gone are dropped.
"""

from __future__ import annotations

import os
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

import sparrow_core

from ..data.store import StoreFull, ValueStore
from ..errors import ProtocolError, RegistrationRefused
from ..wire.limits import MAX_QUEUED_RESERVATIONS, MAX_REASON, MESSAGE_OVERHEAD, clip, too_large
from ..wire.messages import (
    CANCELLED,
    TIMED_OUT,
    TOO_LARGE,
    CancelReservations,
    EnqueueReservations,
    Error,
    GetTask,
    GiveBack,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToScheduler,
    Registered,
    RegisterNodeMonitor,
    ReleaseSession,
    StealPeers,
    StealRelease,
    StealTake,
    Stolen,
    StopTask,
    TaskToNode,
    ValueRef,
)
from ..wire.messages import RegistrationRefused as Refusal
from ..wire.resources import ResourceError
from .config import NodeMonitorConfig
from .fit import FitLauncher, HostResources
from .pipeline import MAX_PIPELINE_DEPTH, make_pipeline
from .steal_logic import WorkStealing

if TYPE_CHECKING:
    from sparrow_core._core import QueuePolicy

# give-back: a running task overruns once it has run GIVE_BACK_FACTOR times the longest of the node's recent run
# times, and at least GIVE_BACK_MIN seconds (docs/pipelining.md, "Give-back")
GIVE_BACK_MIN = 0.02
GIVE_BACK_FACTOR = 3.0


class Stop(msgspec.Struct, frozen=True, gc=False):
    """For the executor (not a wire message): end the running task `task` of job `job_id` now with
    a failed outcome of cause `failure` and text `reason`."""

    job_id: int
    task: int
    failure: int
    reason: str


class Withdraw(msgspec.Struct, frozen=True, gc=False):
    """For the executor (not a wire message): give up task `task` of job `job_id`, which was handed to it
    ahead (`on_handed_ahead`) and is no longer wanted (a forced cancel, its scheduler gone)."""

    job_id: int
    task: int


class _Reserved:
    """What the node monitor knows of one (scheduler, job): its queue key, user and live counts."""

    __slots__ = (
        "ahead",
        "asking",
        "borrowed",
        "job_id",
        "key",
        "order",
        "queued",
        "request",
        "scheduler",
        "session",
        "stealable",
        "user",
    )

    def __init__(self, key: int, scheduler: Hashable, job_id: int, user: str, session: str = "") -> None:
        self.key = key
        self.scheduler = scheduler
        self.job_id = job_id
        self.user = user
        self.session = session  # the client that submitted the job (the values its tasks leave are tagged with it)
        self.queued = 0  # reservations in the queue (own and borrowed)
        self.asking = 0  # GetTask requests awaiting an answer, each holding a slot
        self.ahead = 0  # ... asked ahead (pipelining), holding none yet
        self.stealable = False  # its own reservations may move to a peer (EnqueueReservations.stealable)
        self.borrowed: list | None = None  # work stealing: its reservations stolen from peers (steal_logic._Borrowed)
        self.order: deque | None = None  # with borrowed ones: whose each GetTask in flight is, in order (None: own)
        self.request: tuple[int, ...] | None = None  # what each task takes, over the kinds of fit.py (None: a slot)


class NodeMonitorLogic:
    """Slots, the reservation queue, and the GetTask / launch / finish cycle of one node monitor."""

    def __init__(
        self,
        config: NodeMonitorConfig | None = None,
        *,
        store: ValueStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
        host: HostResources | None = None,
    ) -> None:
        """Run as `config` says (its settings, checked when it was made: slots, policy, weights, pipelining,
        give-back, stealing, inline_limit, its link's max_frame; None: NodeMonitorConfig's defaults), keeping
        values in `store`, timed by `clock`, stealing with `seed`, and offering `host`'s resources (None: none
        besides its slots)."""
        if config is None:
            config = NodeMonitorConfig()
        slots = config.slots or os.cpu_count() or 1
        policy, pipeline_depth, give_back = config.policy, config.pipeline_depth, config.give_back
        self.slots = slots
        self.free = slots
        # pipelining: the mode's policy (pipeline/, over the kernel's rule), `pipeline_depth` asked ahead or bound
        # per running task (per slot held while deep)
        self.pipeline = make_pipeline(config.pipeline, pipeline_depth)
        self.pipeline_depth = pipeline_depth
        # give-back: a task bound ahead behind tasks that all overran goes back to its scheduler (GiveBack)
        self.give_back = self.pipeline.asks_ahead and give_back
        # the running tasks are timed for the policy's rule, or for give-back
        self._keeps_recent = self.pipeline.asks_ahead and (self.pipeline.keeps_recent or give_back)
        self._started: dict[tuple, float] = {}  # (scheduler, job, task) running -> when it started
        self.ahead = 0  # pipelining: requests asked ahead awaiting an answer
        self.running = 0  # tasks handed to the executor and not finished
        self.bound: deque[tuple[Hashable, TaskToNode]] = deque()  # pipelining: answered ahead, waiting for a slot
        self.pinned: set[tuple] = (
            set()
        )  # (scheduler, job, task) of those bound that the executor holds (`on_handed_ahead`)
        self._ahead: dict[int, _Reserved] = {}  # pipelining: the entries with requests asked ahead, oldest first
        self.draining = False
        # the config checked its policy (NodeMonitorConfig): one of QUEUE_POLICIES
        self.queue = sparrow_core.ReservationQueue(cast("QueuePolicy", policy), weights=dict(config.weights))
        self.max_frame = config.link.max_frame
        self.frame_limits: dict[Hashable, int] = {}  # scheduler -> the largest frame its link takes
        self.clock = clock
        self.store = store
        self.inline_limit = config.inline_limit
        self.holder: tuple[str, str] = ("", "")  # (node id, data address) in this node monitor's references
        self.owners: dict[tuple, tuple[str, str]] = {}  # (scheduler, job, task) running -> (user, session)
        self.stats: Counter[str] = Counter()
        self.deadlines: dict[tuple, tuple[float, float]] = {}  # (scheduler, job, task) -> (when, its timeout)
        self._schedulers: dict[Hashable, dict[int, _Reserved]] = {}  # scheduler -> job id -> entry
        self._by_key: dict[int, _Reserved] = {}
        self._next_key = 0
        self.granted_at = clock()  # when a task last started here (work stealing: how long a slot has been held)
        self.stealing = WorkStealing(self, config.steal, seed)
        # resources per task (fit.py): its capacity besides its slots; None: it offers none
        self.fit = (
            None
            if host is None
            else FitLauncher(
                host.capacity,
                gpu_ids=host.gpu_ids,
                cpu_ids=host.cpu_ids,
                window=host.window,
                max_skips=host.max_skips,
                by_priority=policy == "priority",
            )
        )

    # -- schedulers -------------------------------------------------------------------------------

    def registration(
        self,
        node_id: str,
        labels: Sequence[str] = (),
        instance: str = "",
        can_stop: bool = False,
        steal_address: str = "",
    ) -> RegisterNodeMonitor:
        """The message that registers this node monitor with a scheduler (`instance`: random per
        process, see RegisterNodeMonitor; `can_stop`: its executor can stop a running task;
        `steal_address`: where its peers reach it to steal, if it steals)."""
        return RegisterNodeMonitor(
            node_id,
            self.slots,
            tuple(labels),
            instance,
            can_stop,
            steal_address if self.stealing.steal else "",
            self.holder[1],  # its data listener, for clients' uploads (Client.scatter)
            {} if self.fit is None else self.fit.capacity,
        )

    def on_registration_reply(
        self, scheduler: Hashable, reply: Any, name: str = "the scheduler", frame_limit: int | None = None
    ) -> list:
        """Take `reply` to `registration()` from `scheduler` (called `name` in errors): Registered
        takes the scheduler on (a draining node monitor tells it at once, so it is not probed even for
        one heartbeat interval). `frame_limit`: the largest frame its link takes (the smaller of both
        sides' max_frame; None: `max_frame`). Raises RegistrationRefused for a refusal, ProtocolError
        otherwise."""
        kind = type(reply)
        if kind is Refusal:
            raise RegistrationRefused(f"{name} refused this node monitor: {clip(reply.reason, MAX_REASON)}")
        if kind is not Registered:
            why = f"refused: {clip(reply.reason, MAX_REASON)}" if kind is Error else f"answered {kind.__name__}"
            raise ProtocolError(f"{name} {why}")
        self.on_scheduler_registered(scheduler, frame_limit, reply.scheduler_id)
        return [(scheduler, self.heartbeat())] if self.draining else []

    def on_scheduler_registered(
        self, scheduler: Hashable, frame_limit: int | None = None, scheduler_id: str | None = None
    ) -> None:
        self._schedulers.setdefault(scheduler, {})
        if scheduler_id is not None:
            self.stealing.scheduler_named(scheduler, scheduler_id)
        self.frame_limits[scheduler] = self.max_frame if frame_limit is None else min(self.max_frame, frame_limit)

    def on_scheduler_lost(self, scheduler: Hashable) -> list:
        """Drop the reservations of a scheduler that is gone; slots waiting on its answers are freed."""
        out: list = []
        self.frame_limits.pop(scheduler, None)
        if self._started:  # their outcomes will never be reported here
            self._started = {key: when for key, when in self._started.items() if key[0] != scheduler}
        self.pipeline.forget_requests()
        for entry in self._schedulers.pop(scheduler, {}).values():
            cancelled = self.queue.cancel(entry.key)
            if self.fit is not None:
                self.fit.unstage(entry, cancelled)
                if entry.request is not None:
                    for _ in range(entry.asking):
                        self.fit.give(entry.request)
            self.free += entry.asking
            self.ahead -= entry.ahead
            self._ahead.pop(entry.key, None)
            del self._by_key[entry.key]
            if entry.borrowed is not None:  # given back to their lenders, asked for or not (steal_logic.py)
                self.stealing.give_back(entry, out, asked=True)
        self.stealing.scheduler_gone(scheduler)
        if self.bound:  # never started: their scheduler is gone, so no one waits for them
            for peer, msg in self.bound:
                if peer == scheduler and self.pinned:
                    self._unpin_gone(scheduler, msg, out)
            self.bound = deque(b for b in self.bound if b[0] != scheduler)
        self.fill(out)
        return out

    def on_scheduler_messages(self, scheduler: Hashable, msgs: list) -> list:
        out: list = []
        jobs = self._schedulers.get(scheduler)
        if jobs is None:
            return [(scheduler, Error("message from a scheduler this node monitor is not registered with"))]
        for msg in msgs:
            kind = type(msg)
            try:
                if kind is TaskToNode and msg.bound:
                    self._take_bound(scheduler, msg)
                elif kind is TaskToNode:
                    entry, held_slot = self._answered(jobs, msg.job_id, True, out)
                    if self.store is not None:
                        self.owners[(scheduler, msg.job_id, msg.task)] = (entry.user, entry.session)
                    if held_slot:
                        if entry.request is not None and self.fit is not None:
                            self.fit.started((scheduler, msg.job_id, msg.task), entry.request)
                        self._launch(scheduler, msg, out)
                    else:  # asked ahead: it waits for a slot (fill starts it when one is free)
                        self.stats["bound_ahead"] += 1
                        self.bound.append((scheduler, msg))
                        if self.pipeline.times_requests:  # jit times its requests (a call per task else)
                            self.pipeline.answered_ahead(self.clock, self.ahead)
                elif kind is EnqueueReservations:
                    self.enqueue(scheduler, jobs, msg)
                elif kind is NoTask:
                    entry, held_slot = self._answered(jobs, msg.job_id, False, out)
                    self.stats["no_task"] += 1
                    if held_slot:
                        self.free += 1
                        if entry.request is not None and self.fit is not None:
                            self.fit.give(entry.request)
                    else:
                        if self.pipeline.times_requests:  # jit times its requests (a call per task else)
                            self.pipeline.answered_ahead(self.clock, self.ahead)
                    self.queue.refund(entry.user)
                    if self.stealing.steal:
                        self.stealing.steal_due = True
                elif kind is CancelReservations:
                    self.stealing.lent_cancelled(scheduler, msg.job_id)
                    held = jobs.get(msg.job_id)
                    if held is not None:
                        self.stats["cancelled"] += self._drop_queued(jobs, held, out, used=True)
                elif kind is StealPeers:
                    self.stealing.peers_told(scheduler, msg.peers)
                elif kind is ReleaseSession:
                    if self.store is not None:
                        self.stats["values_released"] += self.store.release_session(msg.session, msg.user)
                elif kind is StopTask:
                    self.stats["stop_requests"] += 1
                    if self.bound and self._unbind(scheduler, msg, out):
                        continue
                    reason = "cancelled by its client with force: its worker was stopped"
                    out.append((scheduler, Stop(msg.job_id, msg.task, CANCELLED, reason)))  # for the executor
                elif kind is not Heartbeat and kind is not Registered:
                    raise ProtocolError(f"{kind.__name__} is not allowed from a scheduler")
            except ProtocolError as exc:
                self.stats["protocol_errors"] += 1
                out.append((scheduler, Error(clip(str(exc), MAX_REASON))))
                break
        self.fill(out)
        return out

    def on_task_done(
        self, scheduler: Hashable, job_id: int, task: int, outcome: Outcome, started: tuple | None = None
    ) -> list:
        """The executor finished a launched task: report it (a failure instead if it is too large for
        a frame), free the slot, start the next reservation. `started`: the key (scheduler, job, task) of
        the pinned task that the executor started in its place (`on_handed_ahead`): it takes the slot.
        Several tasks that ended together: `on_task_ended` each, then `on_tasks_ended` once."""
        # not through an instrumented subclass (instruments.observed): this is one step, not two
        out = NodeMonitorLogic.on_task_ended(self, scheduler, job_id, task, outcome, started)
        self._tasks_ended(out)
        return out

    def on_tasks_ended(self) -> list:
        """The tasks that ended together were told (`on_task_ended`): fill the slots they freed, ask ahead."""
        out: list = []
        self._tasks_ended(out)
        return out

    def _tasks_ended(self, out: list) -> None:
        self.fill(out)
        if self.stealing.steal:
            self.stealing.steal_due = True

    def on_task_ended(
        self, scheduler: Hashable, job_id: int, task: int, outcome: Outcome, started: tuple | None = None
    ) -> list:
        """`on_task_done` of one of several tasks that ended together (a worker's read: the shell reports them
        in turn), but for the next reservation: `on_tasks_ended` asks for those once all were told."""
        out: list = []
        self.free += 1
        self.running -= 1
        self.stats["finished"] += 1
        key = (scheduler, job_id, task)
        fit = self.fit
        if fit is not None and fit.held:
            fit.ended(key)
        if self.deadlines:
            self.deadlines.pop(key, None)
        if self._started:
            since = self._started.pop(key, None)
            if since is not None:
                self.pipeline.ran(self.clock() - since)
        if self.store is not None:
            owner = self.owners.pop(key, ("", ""))
            if outcome.ok and len(outcome.payload) > self.inline_limit:
                outcome = self._keep(outcome, *owner)
        size = len(outcome.payload) + len(outcome.error)
        limit = self.frame_limits.get(scheduler, self.max_frame)
        if size + MESSAGE_OVERHEAD > limit:  # too_large's rule, asked first (a call per task else)
            problem = too_large("the task's outcome", size, limit, "of the link to its scheduler")
            assert problem is not None
            self.stats["outcomes_too_large"] += 1  # that task fails alone, once; the link stays
            outcome = Outcome(False, b"", problem, TOO_LARGE)
        if scheduler in self._schedulers:
            out.append((scheduler, OutcomeToScheduler(job_id, task, outcome)))
        if started is not None and started in self.pinned:
            self.pinned.discard(started)
            bound = self.bound
            for i, (peer, msg) in enumerate(bound):
                if peer == started[0] and msg.job_id == started[1] and msg.task == started[2]:
                    if i:
                        del bound[i]
                    else:  # the usual case: the first bound task follows the one that ended
                        bound.popleft()
                    self.free -= 1
                    self._launch(peer, msg, out, started)
                    break
        return out

    def on_timer(self) -> list:
        """A Stop (TIMED_OUT) for each running task past its job's timeout, once."""
        out: list = []
        if self.deadlines:
            now = self.clock()
            for key, (when, timeout) in list(self.deadlines.items()):
                if now >= when:
                    del self.deadlines[key]
                    scheduler, job_id, task = key
                    self.stats["timed_out"] += 1
                    reason = f"the task ran past its job's timeout of {timeout:g} s and was stopped"
                    out.append((scheduler, Stop(job_id, task, TIMED_OUT, reason)))
        return out

    def _keep(self, outcome: Outcome, user: str, session: str) -> Outcome:
        """Keep a big result in the store; the outcome that refers to it (or fails, the store full)."""
        assert self.store is not None
        value = outcome.payload
        try:
            key = self.store.put(value, user, session)
        except StoreFull as exc:
            self.stats["values_refused"] += 1
            return Outcome(False, b"", str(exc), TOO_LARGE)
        self.stats["values_kept"] += 1
        node_id, address = self.holder
        return Outcome(True, ref=ValueRef(node_id, address, key, len(value)))

    @property
    def busy(self) -> int:
        """Slots running a task or waiting for a GetTask answer, plus (pipelining) the tasks bound to a
        busy slot and the requests asked ahead: 0 once nothing is owed to a scheduler (drain)."""
        return self.slots - self.free + len(self.bound) + self.ahead

    def drain(self) -> list:
        """Drop the queued reservations, take no more, and tell the schedulers (module docstring)."""
        self.draining = True
        out: list = []
        for jobs in self._schedulers.values():
            for entry in list(jobs.values()):
                self._drop_queued(jobs, entry, out, used=False)
        return out + [(scheduler, self.heartbeat()) for scheduler in self._schedulers]

    def heartbeat(self) -> Heartbeat:
        """The Heartbeat to send a scheduler now."""
        queued = len(self.queue) + (len(self.fit.staged) if self.fit is not None else 0)
        return Heartbeat(queued, self.slots - self.free, self.draining)  # busy slots, at most `slots`

    # -- internals --------------------------------------------------------------------------------

    def enqueue(self, scheduler: Hashable, jobs: dict[int, _Reserved], msg: EnqueueReservations) -> None:
        if len(self.queue) + msg.count > MAX_QUEUED_RESERVATIONS:
            raise ProtocolError(
                f"{msg.count} more reservations would make {len(self.queue) + msg.count} queued here, over the "
                f"limit of {MAX_QUEUED_RESERVATIONS}"
            )
        if self.draining:  # sent before the scheduler heard: it drops them when it does
            self.stats["dropped_draining"] += msg.count
            return
        entry = jobs.get(msg.job_id)
        if entry is None:
            entry = self.new_entry(scheduler, jobs, msg.job_id, msg.user, msg.session)
        elif entry.user != msg.user:
            raise ProtocolError(f"job {msg.job_id} was reserved for user {clip(entry.user)!r}, now {clip(msg.user)!r}")
        entry.stealable = msg.stealable
        if msg.resources:
            self._sized(entry, msg)
        elif entry.request is not None:
            raise ProtocolError(f"job {msg.job_id}'s reservations ask for different resources")
        self.queue.push(entry.key, entry.user, msg.priority, count=msg.count)
        entry.queued += msg.count
        self.stats["reservations"] += msg.count

    def _sized(self, entry: _Reserved, msg: EnqueueReservations) -> None:
        """Reservations of a job with resources: their request over this node monitor's kinds (fit.py)."""
        if self.fit is None:
            raise ProtocolError(f"job {msg.job_id} asks for resources, and this node monitor offers none")
        try:
            request = self.fit.request(msg.resources or {})
        except ResourceError as exc:
            raise ProtocolError(f"job {msg.job_id}: {exc}") from None
        if (entry.request is not None and entry.request != request) or (entry.request is None and entry.queued):
            raise ProtocolError(f"job {msg.job_id}'s reservations ask for different resources")
        entry.request = request
        self.fit.sized += msg.count

    def new_entry(
        self, scheduler: Hashable, jobs: dict[int, _Reserved], job_id: int, user: str, session: str
    ) -> _Reserved:
        entry = _Reserved(self._next_key, scheduler, job_id, user, session)
        self.add_key(entry)  # the key it was made with
        jobs[job_id] = entry
        return entry

    def _drop_queued(self, jobs: dict[int, _Reserved], entry: _Reserved, out: list, used: bool) -> int:
        """Remove the job's queued reservations; returns how many there were. Borrowed ones are released to
        their lenders: `used` (the job's reservations were cancelled) or given back (draining)."""
        removed = self.queue.cancel(entry.key)
        if self.fit is not None:
            removed += self.fit.unstage(entry, removed)
        if entry.borrowed is not None:
            removed += self.stealing.drop_borrowed(entry, out, used)
        entry.queued -= removed
        self.forget_if_idle(jobs, entry)
        return removed

    def _answered(self, jobs: dict[int, _Reserved], job_id: int, task: bool, out: list) -> tuple[_Reserved, bool]:
        """An answer (a task or not) about job_id: the entry, and whether the request it answers held a
        slot. Requests of one job are alike, so a task answers one that holds a slot if there is one,
        NoTask one asked ahead if there is one."""
        entry = jobs.get(job_id)
        if entry is None:
            raise ProtocolError(f"answer for job {job_id}, which this node monitor did not ask about")
        if entry.asking and (task or not entry.ahead):
            entry.asking -= 1
            held_slot = True
        elif entry.ahead:
            entry.ahead -= 1
            self.ahead -= 1
            if not entry.ahead:
                del self._ahead[entry.key]
            held_slot = False
        else:
            raise ProtocolError(f"answer for job {job_id}, which this node monitor did not ask about")
        if entry.order:  # a stolen reservation's request answered: its lender may forget it
            self.stealing.answered_for(entry, out)
        if not entry.queued:  # else it is not idle (forget_if_idle): a call per answer saved
            self.forget_if_idle(jobs, entry)
        return entry, held_slot

    def _take_bound(self, scheduler: Hashable, msg: TaskToNode) -> None:
        """A task sent unasked with its job's reservations (TaskToNode.bound: its scheduler believed this node
        monitor idle): it waits, bound, for the next free slot (at once if one is free), ahead of the queue."""
        limit = self.slots * (MAX_PIPELINE_DEPTH + 1)
        if len(self.bound) >= limit:
            raise ProtocolError(f"a task sent unasked, with {len(self.bound)} bound here already (the limit: {limit})")
        self.stats["bound_unasked"] += 1
        if self.store is not None:
            self.owners[(scheduler, msg.job_id, msg.task)] = (msg.user, msg.session)
        self.bound.append((scheduler, msg))

    def forget_if_idle(self, jobs: dict[int, _Reserved], entry: _Reserved) -> None:
        if entry.queued == 0 and entry.asking == 0 and entry.ahead == 0:
            del jobs[entry.job_id]
            del self._by_key[entry.key]
            if entry.borrowed is not None:
                self.stealing.forget_borrowed(entry)

    def _launch(self, scheduler: Hashable, msg: TaskToNode, out: list, key: tuple | None = None) -> None:
        """Hand the task to the executor (an output for the shell); its timeout starts now. `key`: its (scheduler,
        job, task), if the caller has it."""
        self.running += 1
        self.stats["launched"] += 1
        self.granted_at = now = self.clock()
        out.append((scheduler, msg))
        if msg.timeout or self._keeps_recent:
            if key is None:
                key = (scheduler, msg.job_id, msg.task)
            if msg.timeout:
                self.deadlines[key] = (now + msg.timeout, msg.timeout)
            if self._keeps_recent:
                self._started[key] = now

    def on_started_late(self, key: tuple) -> list:
        """The launched task `key` waited in the executor for a worker (one being replaced) and starts now:
        its timeout and run time count from now."""
        if key in self.deadlines:
            timeout = self.deadlines[key][1]
            self.deadlines[key] = (self.clock() + timeout, timeout)
        if key in self._started:
            self._started[key] = self.clock()
        return []

    def _fill_fitting(self, fit: FitLauncher, out: list) -> None:
        """While a slot is free: the reservation the launch rule picks from the window asks its scheduler for a
        task, holding its request's units (a borrowed one at the head of the queue, with the window empty, asks
        once its request fits in what is free)."""
        queue = self.queue
        while self.free > 0 and not self.draining:
            fit.stage(queue, self.stealing.borrowed, self._by_key)
            if fit.staged:
                index = fit.choose(self.free)
                if index is None:
                    self.stats["fit_waits"] += 1
                    return
                key, entry = fit.launched(index)
            elif queue:
                head = queue.peek()
                assert head is not None  # the queue is not empty
                key = head.job_id
                entry = self._by_key[key]
                if entry.request is not None:  # borrowed with a request (steal_logic.py)
                    if not fit.fits(entry.request):
                        self.stats["fit_waits"] += 1
                        return
                    fit.take(entry.request)
                    fit.left_queue(entry, 1)
                queue.pop()
            else:
                return
            entry.queued -= 1
            entry.asking += 1
            self.free -= 1
            self.stats["get_task"] += 1
            out.append(
                (entry.scheduler, GetTask(entry.job_id) if entry.order is None else self.stealing.ask_for(entry, key))
            )

    # -- the face work stealing sees (steal_logic.StealHost) and the steps it takes ---------------------

    def idle(self) -> bool:
        """A slot is free, nothing is queued or waits in the launch rule's window (fit.py), not draining."""
        return not self.draining and self.free > 0 and not self.queue and (self.fit is None or not self.fit.staged)

    def jobs_of(self, scheduler: Hashable) -> dict[int, _Reserved] | None:
        return self._schedulers.get(scheduler)

    def scheduler_jobs(self) -> Iterable[tuple[Hashable, dict[int, _Reserved]]]:
        return self._schedulers.items()

    def add_key(self, entry: _Reserved) -> int:
        key = self._next_key
        self._next_key += 1
        self._by_key[key] = entry
        return key

    def drop_key(self, key: int) -> None:
        self._by_key.pop(key, None)

    def entry_at(self, key: int) -> _Reserved:
        return self._by_key[key]

    def on_stolen(self, lender: Hashable, msg: Stolen, asked: int) -> list:
        """Thief: queue the reservations `lender` lent (WorkStealing.on_stolen)."""
        return self.stealing.on_stolen(lender, msg, asked)

    def give(self, thief: Hashable, msg: StealTake, out: list) -> Stolen:
        """Victim: lend `thief` reservations from the head of the queue or the launch rule's window; what that
        frees to launch here goes to `out` (WorkStealing.give)."""
        return self.stealing.give(thief, msg, out)

    def on_release(self, thief: Hashable, msg: StealRelease) -> list:
        """Victim: the thief is done with lent reservations (WorkStealing.on_release)."""
        return self.stealing.on_release(thief, msg)

    def on_thief_lost(self, thief: Hashable) -> list:
        """Victim: the steal link to `thief` ended (WorkStealing.on_thief_lost)."""
        return self.stealing.on_thief_lost(thief)

    # -- just in time -----------------------------------------------------------------------------

    def ask_ahead_at(self) -> float | None:
        """Just in time: when (`clock` time) a running task next becomes due to ask ahead while reservations wait
        (the shell then calls `on_ask_ahead_timer`); None: none will (a change of the queue or the tasks comes
        through the logic's other calls, which ask ahead themselves)."""
        if not self.queue or self.draining:
            return None
        return self.pipeline.ask_ahead_at(self._started.values(), self.clock())

    def on_ask_ahead_timer(self) -> list:
        """Just in time: ask ahead for the running tasks due now (`ask_ahead_at`)."""
        out: list = []
        self.fill(out)
        return out

    # -- give-back --------------------------------------------------------------------------------

    def overrun_after(self) -> float:
        """Seconds after which a running task overruns (give-back): GIVE_BACK_FACTOR times the longest of the
        recent run times, at least GIVE_BACK_MIN."""
        return max(GIVE_BACK_MIN, GIVE_BACK_FACTOR * self.pipeline.rule.longest)

    def _fresh(self) -> int:
        """Running tasks that have not overrun (give-back): those a bound task may wait behind."""
        since = self.clock() - self.overrun_after()
        return sum(1 for when in self._started.values() if when > since)

    def _kept_bound(self) -> int:
        """How many of the bound tasks the executor does not hold may stay bound here (give-back): a pipeline's
        depth behind each running task that has not overrun, less the tasks handed ahead (they stay)."""
        return max(0, self._fresh() * self.pipeline_depth - len(self.pinned))

    def give_back_at(self) -> float | None:
        """When (`clock` time) `on_give_back_timer` may next give a task back; None: nothing bound could be."""
        if not self.give_back or len(self.bound) <= len(self.pinned):
            return None
        now = self.clock()
        if len(self.bound) - len(self.pinned) > self._kept_bound():
            return now
        after = self.overrun_after()
        later = [when + after for when in self._started.values() if when + after > now]
        return min(later) if later else None

    def on_give_back_timer(self) -> list:
        """Give back to their schedulers (GiveBack) the bound tasks, latest first, that wait behind running tasks
        that all overran, past what may stay (`_kept_bound`); the executor's tasks (pinned) are never given back:
        a worker may have started them. Each given back is forgotten here: it never runs here."""
        out: list = []
        if not self.give_back:
            return out
        excess = len(self.bound) - len(self.pinned) - self._kept_bound()
        if excess <= 0:
            return out
        kept: list = []
        while self.bound and excess > 0:
            scheduler, msg = self.bound.pop()
            key = (scheduler, msg.job_id, msg.task)
            if key in self.pinned:
                kept.append((scheduler, msg))
                continue
            excess -= 1
            self.owners.pop(key, None)
            self.stats["given_back"] += 1
            out.append((scheduler, GiveBack(msg.job_id, msg.task)))
        self.bound.extend(reversed(kept))
        out.reverse()  # in the order they were bound
        return out

    @property
    def may_pin(self) -> bool:
        """Whether to hand bound tasks to the executor ahead (`on_handed_ahead`): with one slot (its one worker is the
        only place a bound task can start anyway), or with several while the recent tasks ran short (a deep
        pipeline's PIPELINE_SHORT_TASK rule: the hop saved is then most of a task's cost, and a pinned task waits
        at most a short task for its worker). Otherwise a bound task takes whichever slot frees first.
        With give-back, only while the recent tasks ran short: a task handed ahead can never be given back (its
        worker may start it at any moment, and a recall would be answered only when the running task ends), so
        the bound tasks of longer ones stay here, where they can be."""
        return self.pipeline.short or (self.slots == 1 and not self.give_back)

    def on_handed_ahead(self, keys: Iterable[tuple]) -> list:
        """The bound tasks `keys` (scheduler, job, task) were handed to the executor ahead, each queued behind a
        running task: each starts when the executor says so (`on_task_done`'s `started`), not in whichever
        slot frees first; `on_given_back` (it never started: its worker died) makes it an ordinary bound task again,
        and giving it up (a forced cancel, its scheduler gone) tells the executor (Withdraw)."""
        self.pinned.update(keys)
        return []

    def on_given_back(self, keys: Sequence[tuple]) -> list:
        """The pinned tasks `keys` did not start and the executor holds them no more (module docstring)."""
        out: list = []
        self.pinned.difference_update(keys)
        self.fill(out)
        return out

    def _unpin_gone(self, scheduler: Hashable, msg: TaskToNode, out: list) -> None:
        key = (scheduler, msg.job_id, msg.task)
        if key in self.pinned:
            self.pinned.discard(key)
            out.append((scheduler, Withdraw(msg.job_id, msg.task)))

    def _unbind(self, scheduler: Hashable, msg: StopTask, out: list) -> bool:
        """A forced cancel of a task bound ahead (not started): it is dropped and reports CANCELLED now.
        Returns whether it was one."""
        for i, (peer, bound) in enumerate(self.bound):
            if peer == scheduler and bound.job_id == msg.job_id and bound.task == msg.task:
                del self.bound[i]
                self._unpin_gone(scheduler, bound, out)
                self.owners.pop((scheduler, msg.job_id, msg.task), None)
                reason = "cancelled by its client with force before it started"
                out.append(
                    (scheduler, OutcomeToScheduler(msg.job_id, msg.task, Outcome(False, b"", reason, CANCELLED)))
                )
                return True
        return False

    def fill(self, out: list) -> None:
        """While a slot is free and a reservation waits: pop it and ask its scheduler for a task.
        Pipelining: a free slot first starts a bound task, else takes over a request asked ahead; then
        busy slots ask ahead (module docstring)."""
        if self.bound or self._ahead:  # pipelining, or tasks sent unasked (TaskToNode.bound)
            while self.free > 0 and len(self.bound) > len(self.pinned):
                self.free -= 1
                if not self.pinned:
                    self._launch(*self.bound.popleft(), out)
                    continue
                for i, (peer, msg) in enumerate(self.bound):  # the first the executor does not hold
                    if (peer, msg.job_id, msg.task) not in self.pinned:
                        del self.bound[i]
                        self._launch(peer, msg, out)
                        break
            while self.free > 0 and self._ahead:
                entry = next(iter(self._ahead.values()))
                entry.ahead -= 1
                entry.asking += 1
                self.ahead -= 1
                self.pipeline.ahead_took_slot()
                if not entry.ahead:
                    del self._ahead[entry.key]
                self.free -= 1
        queue = self.queue
        fit = self.fit
        fitting = fit is not None and fit.active  # reservations with resources wait: the launch rule decides (fit.py)
        if fit is not None and fitting:
            self._fill_fitting(fit, out)
        while self.free > 0 and queue and not self.draining and not fitting:
            reservation = queue.pop()
            assert reservation is not None  # the queue is not empty
            entry = self._by_key[reservation.job_id]
            entry.queued -= 1
            entry.asking += 1
            self.free -= 1
            self.stats["get_task"] += 1
            if entry.order is None:
                out.append((entry.scheduler, GetTask(entry.job_id)))
            else:
                out.append((entry.scheduler, self.stealing.ask_for(entry, reservation.job_id)))
        # nothing to ask ahead: none queued, draining, or a fit launcher holding reservations back (fit.py)
        if not queue or self.draining or fitting:
            return
        pipeline = self.pipeline
        limit = pipeline.limit(self.slots - self.free, self.running, self._started.values(), self.clock)
        if self.give_back and limit:  # not behind tasks that overran: what it holds there it would give back
            limit = min(limit, self._fresh() * self.pipeline_depth)
        room = limit - len(self.bound)  # requests it may ask ahead in all (the bound tasks count against it)
        if self.ahead >= room:
            return
        halves = pipeline.half_rule_applies()
        by_key = self._by_key
        entries = self._ahead
        times_requests = pipeline.times_requests
        asked = ahead = self.ahead
        while queue and ahead < room:
            if halves:  # at most half of what it holds of the job (deep or gated: module docstring)
                head = queue.peek()
                assert head is not None  # the queue is not empty
                entry = by_key[head.job_id]
                if not pipeline.rule.half_allows(entry.ahead, entry.queued):
                    break
                queue.pop()  # the head peeked
                key = head.job_id
            else:
                reservation = queue.pop()
                assert reservation is not None  # the queue is not empty
                key = reservation.job_id
                entry = by_key[key]
            entry.queued -= 1
            entry.ahead += 1
            ahead += 1
            entries.setdefault(entry.key, entry)
            if times_requests:  # jit times its requests
                pipeline.asked_ahead(self.clock)
            if entry.order is None:
                out.append((entry.scheduler, GetTask(entry.job_id)))
            else:
                out.append((entry.scheduler, self.stealing.ask_for(entry, key)))
        self.ahead = ahead
        asked = ahead - asked
        if asked:
            stats = self.stats
            stats["get_task"] += asked
            stats["asked_ahead"] += asked
