"""The scheduler's decisions, sans-I/O: messages in, `(peer, message)` pairs out. No sockets, no trio.

Peers are opaque hashable handles chosen by the caller (the trio shell passes its Connection objects,
tests pass strings). Every decision a kernel makes is made by the kernel: probe selection by
`sparrow_core.sample_job` (a job constraint and per-task constraints together), late binding and
cancellation by `TaskTable`. This class adds only bookkeeping around them, in parts with one job each:

- node monitors (scheduler_nodes.py, `membership`): registration, draining, loss, and the views placement
  reads. A job's candidates are the worker ids of the live node monitors satisfying its constraint, a
  task's those satisfying its own (fixed at submission); the kernel keeps a task to those that are also
  the job's.
- preferences (`SubmitJob.task_prefer`): a task's preferred node monitors, by id, are the live ones
  registered under those ids at submission; the kernel probes them first, then random ones
  (`sample_job`'s `prefer`), and the task table holds such a task as soft: it runs where it is
  asked for first, preferred or not, so a busy preferred node monitor never holds it up. Ids of
  no live node monitor are ignored.
- jobs: payloads, owner, which tasks are running where, and which outcomes were delivered, so every
  task gets exactly one outcome (`OutcomeToClient`) whatever happens to node monitors or clients.
- re-probing: a job whose reservations are all consumed or lost while tasks remain unlaunched
  (`TaskTable.outstanding == 0` and `unlaunched` not empty) is probed again for those tasks.
- a lost node monitor: its reservations are dropped (and re-probed as above), and the tasks running
  there are reported failed as system failures (the client decides whether to retry them: a task
  may have side effects).
- frame limits: a job's reservations go only to node monitors whose link takes its largest task
  (frame_limits); a task too large for every one of them fails alone (TOO_LARGE).
- a job that no live node monitor can take (none, or none satisfying its constraint, or none whose
  capacity holds its resources) waits up to `placement_timeout` for one to register (`on_timer` gives
  up, a job asking for more than any capacity naming the largest seen); a task whose own constraint
  and the job's leave it no node monitor fails at once.
- resources (`SubmitJob.resources`, docs/resources.md): a job's request is a constraint derived from it,
  the live node monitors whose registered capacity holds it (the kernel's feasible_workers); its
  reservations carry it, so the node monitor launches one only where it fits now (fit.py). Its tasks are
  never bound to an idle node monitor unasked (bind_idle); its reservations may be stolen, by a node monitor
  whose registered capacity holds the request (a GetTask for one from another is a protocol error).
- a lost client: its jobs are dropped and their reservations cancelled at once; its running tasks
  are stopped (StopTask) on the node monitors that can stop tasks once it has not come back (a
  client of the same id and user connecting) within `client_grace`, so their slots go back to work. Where
  a node monitor cannot stop tasks (thread executors) they run to their end, their outcomes dropped. Then,
  too, every node monitor is told to drop the values its tasks left there (ReleaseSession: a job's
  reservations carry its client's id as the session those values are tagged with). A session belongs to
  its client's certificate user: another user's client claiming the same id (here or at another
  scheduler) is another session, and its ReleaseSession names its own user, so node monitors drop only
  that user's values of it (an admin's, or any without TLS, names none: all of the session's).
- traffic: `stats` counts the bytes of task payloads and outcomes (payload and error text) it took
  from clients and node monitors and sent on (bytes_from_clients, bytes_to_node_monitors,
  bytes_from_node_monitors, bytes_to_clients): the data that passes through this scheduler.
- work stealing (services/steal.py): a node monitor registering with a `steal_address` steals; each
  such one is told the others' addresses (scheduler_nodes.py) as they come, go or drain. A job without
  constraints, preferences or a timeout, submitted while some node monitor steals (and with every link
  taking the same frames), has stealable reservations. A
  GetTask naming another node monitor as its `origin` consumes that one's reservation in the TaskTable
  and runs the task at the sender, so a stolen reservation binds at most one task, as at its origin,
  and the job still ends: its reservation is counted as answered. An origin that is gone held nothing
  any more (its reservations were dropped and re-probed): NoTask.
- tasks bound with their reservations (`bind_idle`, on by default): a probed node monitor that this
  scheduler believes idle (`_free_slots`: no task of ours there whose outcome it has not reported, no live
  job of ours probed it, and its last heartbeat sent while it held nothing of ours showed no other work)
  gets up to its slots of the job's tasks at once (TaskToNode.bound), each consuming one of the job's
  reservations there in the TaskTable, instead of those reservations: the job's first tasks start without
  a GetTask round trip. Such a task is launched as for any TaskToNode (the loss of its node monitor fails
  it as SYSTEM, a forced cancel stops it); a node monitor that is busy after all (a stale belief: another
  scheduler's work since its heartbeat, a task cancelled without force still running) runs it in its next
  free slot, ahead of its queue, so each task is still handed out once.
- give-back (give_back.py): a node monitor hands back a task it was given and never started (GiveBack: it
  waited bound ahead behind a task that overran); it is un-launched and goes to the job's next GetTask. A
  task's payload is kept until its outcome is delivered, for that.
- task control: a client's CancelJob ends the tasks it names as cancelled at once (StopTask kills a
  running one with `force`), a job's `timeout` goes to the node monitors with each TaskToNode (and
  such a job is placed only where tasks can be stopped), Heartbeats from clients are echoed, and a
  client may have at most `max_client_tasks` unfinished tasks.

Users: a peer may carry an `identity` (tls.Identity, the certificate it authenticated with over TLS).
A client's job then runs as its identity's user (the fair-share user node monitors see): one that
names another user is rejected, and its StatusRequest shows only that user's jobs; an admin may name
any user and sees every job. A peer without one (the shared-secret mode, tests) names its own user
and sees every job. A client cancels only the jobs it submitted (refs are per connection).

Error handling: a message not allowed from a peer (a client sending GetTask, a node monitor sending
anything before RegisterNodeMonitor) is answered with Error, which closes that connection; the
messages of its batch before it keep their effects and their outputs. An invalid job, or one over
a limit (limits.py), is answered with JobRejected and changes nothing. A node monitor registering
under an id that is live on another link is refused (RegistrationRefused; scheduler_nodes.py says when
a link counts as live). Messages about jobs or tasks that are already finished are normal races and are
ignored.
"""

from __future__ import annotations

import math
import os
import time
from array import array
from collections import Counter
from collections.abc import Callable, Hashable

import numpy as np

import sparrow_core

from ..errors import ProtocolError
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.limits import MAX_REASON, MESSAGE_OVERHEAD, clip, job_problem, too_large
from ..wire.messages import (
    CANCELLED,
    SYSTEM,
    TOO_LARGE,
    UNPLACEABLE,
    CancelJob,
    CancelReservations,
    Constraint,
    EnqueueReservations,
    Error,
    GetTask,
    GiveBack,
    Heartbeat,
    JobAccepted,
    JobRejected,
    JobStatus,
    NoTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    ReleaseSession,
    StatusReply,
    StatusRequest,
    StopTask,
    SubmitJob,
    TasksReply,
    TasksRequest,
    TaskStarted,
    TaskToNode,
    failed,
)
from ..wire.resources import format_resources
from .arguments import check_counts, check_flags
from .give_back import GiveBacks
from .outbox import Outbox
from .placement_log import PlacementLog
from .scheduler_nodes import SHORT_TASK, STOPS_TASKS, Membership, Node
from .task_history import TaskEntry, TaskHistory, error_summary, fitting

DEFAULT_PROBE_RATIO = 2.0
DEFAULT_PLACEMENT_TIMEOUT = 5.0  # seconds a job may wait for a node monitor that can take it
DEFAULT_MAX_CLIENT_TASKS = 1_000_000  # unfinished tasks one client may have at this scheduler
DEFAULT_CLIENT_GRACE = 2.0  # seconds a lost client may take to come back before its running tasks are stopped
_ECHO = Heartbeat()
DEFAULT_BIND_IDLE = True  # a job's first tasks go with its reservations to node monitors believed idle
BIND_AHEAD = 8  # bind_idle: tasks bound per slot beyond the first, at most, to a node monitor of short tasks
# bind_idle: a job of at most TINY_JOB_TASKS tasks per free slot that one idle node monitor would run in at most
# TINY_JOB_WORK seconds (by the time per task of its last TINY_SPANS busy spans) goes there whole (_bound_share)
TINY_JOB_WORK = 0.0005
TINY_JOB_TASKS = 16
TINY_SPANS = 2


class _Job:
    __slots__ = (
        "attempts",
        "client",
        "constraint",
        "done",
        "job_id",
        "launched_at",
        "n_done",
        "payloads",
        "per_task",
        "prefer",
        "prefer_offsets",
        "preferred",
        "priority",
        "probe_ratio",
        "probed",
        "ref",
        "report_started",
        "resources",
        "running",
        "session",
        "stealable",
        "submitted",
        "task_candidates",
        "task_offsets",
        "timeout",
        "user",
    )

    def __init__(
        self,
        job_id: int,
        client: Hashable,
        msg: SubmitJob,
        probe_ratio: float,
        user: str,
        session: str = "",
        submitted: float = 0.0,
    ) -> None:
        self.job_id = job_id
        self.client = client
        self.session = session  # its client's id: the values its tasks leave at node monitors are tagged with it
        self.ref = msg.ref
        self.report_started = msg.report_started  # its client hears of each task handed out (TaskStarted)
        self.payloads: list[bytes | None] = list(msg.tasks)
        self.user = user
        self.priority = msg.priority
        self.probe_ratio = probe_ratio
        self.timeout = msg.timeout or 0.0
        self.per_task = msg.sampling == "per_task"  # each task probes for itself
        # what each task takes besides its slot (None: nothing): its probes go only where it fits
        self.resources = {name: units for name, units in msg.resources.items() if units} if msg.resources else None
        if not self.resources:
            self.resources = None
        self.constraint = msg.constraint
        if self.timeout:  # only where a running task can be stopped
            c = msg.constraint or Constraint()
            self.constraint = Constraint(c.node_monitors, (*c.labels, STOPS_TASKS))
        # per-task constraints as the workers satisfying them at submission, flat: task t's are
        # task_candidates[task_offsets[t]:task_offsets[t + 1]] (empty: unconstrained); None: no task constrained
        self.task_candidates: np.ndarray | None = None
        self.task_offsets: np.ndarray | None = None
        # per-task preferences as worker ids, flat as the constraints; preferred[t]: task t's as a set
        self.prefer: np.ndarray | None = None
        self.prefer_offsets: np.ndarray | None = None
        self.preferred: list[frozenset[int]] | None = None
        self.done = bytearray(len(msg.tasks))
        self.n_done = 0
        # for the task history (task_history.py): when the job came, each task's last launch and launch count
        self.submitted = submitted
        self.launched_at = array("d", bytes(8 * len(msg.tasks)))
        self.attempts = array("I", bytes(4 * len(msg.tasks)))
        self.running: dict[int, int] = {}  # task -> worker
        self.probed: set[int] = set()  # workers that got reservations (or ran a task for a stolen one)
        self.stealable = False  # its reservations may move between node monitors (set at submission)


class SchedulerLogic:
    """The state and decisions of one scheduler. Each `on_*` method returns the messages to send.

    `clock` (seconds) dates the node monitors' last messages (StatusReply) and the jobs waiting for
    a node monitor; `on_timer` (call it a few times a second) fails those waiting past
    `placement_timeout` (0: fail at once). A client may have `max_client_tasks` unfinished tasks.
    `frame_limits` holds the largest frame each peer's link takes (the smaller max_frame of both
    sides; the shell sets it as a peer connects, before its first message; `max_frame` for a peer not
    in it). Where node monitors' links differ, a job is probed only on those whose link takes its
    largest unlaunched task, so a node monitor that told a small limit is left out rather than handed
    tasks that fail; a task that no node monitor which may run it can take fails alone (TOO_LARGE),
    naming its size and the largest limit, as does an outcome over its client's link.
    The shell names each client as it connects (`on_client_connected`); `on_timer` also stops the
    running tasks of clients lost for `client_grace` seconds.
    """

    def __init__(
        self,
        *,
        scheduler_id: str = "scheduler",
        probe_ratio: float = DEFAULT_PROBE_RATIO,
        seed: int | None = None,
        placement_timeout: float = DEFAULT_PLACEMENT_TIMEOUT,
        max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS,
        max_frame: int = DEFAULT_MAX_FRAME,
        client_grace: float = DEFAULT_CLIENT_GRACE,
        clock: Callable[[], float] = time.monotonic,
        bind_idle: bool = DEFAULT_BIND_IDLE,
        history: TaskHistory | None = None,
    ) -> None:
        if not 0 <= placement_timeout < math.inf:
            raise ValueError(f"placement_timeout must be a number of seconds >= 0, got {placement_timeout!r}")
        if not 0 <= client_grace < math.inf:
            raise ValueError(f"client_grace must be a number of seconds >= 0, got {client_grace!r}")
        check_counts(max_client_tasks=max_client_tasks)
        check_flags(bind_idle=bind_idle)
        self.scheduler_id = scheduler_id
        self.clock = clock
        self.bind_idle = bind_idle  # tasks go with their reservations to node monitors believed idle
        self.placement_timeout = placement_timeout
        self.max_client_tasks = max_client_tasks
        self.max_frame = max_frame
        self.frame_limits: dict[Hashable, int] = {}  # peer -> the largest frame its link takes
        self.client_grace = client_grace
        # connected client peer -> its session: its id, and the user it belongs to (None: any; on_client_connected)
        self.client_ids: dict[Hashable, tuple[str, str | None]] = {}
        # running tasks of lost clients: (when to stop them, the client's id, [(worker, job id, task)])
        self.orphans: list[tuple[float, tuple[str, str | None] | None, list[tuple[int, int, int]]]] = []
        self.unfinished: Counter[Hashable] = Counter()  # unfinished tasks per client
        self.waiting: dict[int, tuple[float, str]] = {}  # job id -> (deadline, why it cannot be placed)
        self._refs: dict[tuple[Hashable, int], int] = {}  # (client, ref) -> job id
        self.probe_ratio = sparrow_core.check_probe_ratio(probe_ratio)
        self.rng = sparrow_core.Rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
        self.table = sparrow_core.TaskTable()
        self.jobs: dict[int, _Job] = {}
        self.clients: dict[Hashable, set[int]] = {}
        self.stats: Counter[str] = Counter()
        # the registered node monitors (scheduler_nodes.py); its two maps read directly on the hot paths
        self.membership = Membership(scheduler_id, self.stats, clock, self.rng, self.frame_limits, max_frame)
        self.nodes = self.membership.nodes
        self._by_worker = self.membership.by_worker
        self._next_job = 1
        self.give_backs = GiveBacks(self)  # a node monitor's GiveBack: the task launches again elsewhere
        self.placements: PlacementLog | None = None  # each job's probed node monitors, if asked (placement_log.py)
        # how recent tasks ended (task_history.py), timed with this logic's clock: `now` is its time at the start of
        # the batch being handled (one clock read per batch, not two per task)
        self.history = history if history is not None else TaskHistory(clock=clock)
        self.now = clock()

    # -- node monitors ----------------------------------------------------------------------------

    def on_node_messages(self, peer: Hashable, msgs: list) -> Outbox:
        out: Outbox = []
        node = self.nodes.get(peer)
        now = self.now = self.clock()
        if node is not None:
            node.heard = now
        for msg in msgs:
            kind = type(msg)
            try:
                if node is None:
                    if kind is not RegisterNodeMonitor:
                        raise ProtocolError(f"{kind.__name__} before RegisterNodeMonitor")
                    node = self._register(peer, msg, out)
                    if node is None:  # refused
                        break
                elif kind is GetTask:
                    self._get_task(node, msg.job_id, out, msg.origin)
                elif kind is OutcomeToScheduler:
                    self._task_finished(node, msg, out)
                elif kind is GiveBack:
                    self.give_backs.take_back(node, msg, out)
                elif kind is Heartbeat:
                    node.queued, node.busy = msg.queued, msg.busy
                    if self.bind_idle and not self._holds_ours(node):  # then what it shows is others' work
                        node.others = msg.queued > 0 or msg.busy > 0
                    out.append((peer, _ECHO))
                    if msg.draining and not node.draining:  # probe it no more; re-probe what it held
                        self.membership.drain(node)
                        self._reprobe_held_by(node, out)
                else:
                    raise ProtocolError(f"{kind.__name__} is not allowed from a registered node monitor")
            except ProtocolError as exc:
                self._violation(peer, exc, out)
                break
        self.membership.tell_peers(out)
        return out

    def _violation(self, peer: Hashable, exc: ProtocolError, out: Outbox) -> None:
        """`peer` broke the protocol: answer Error (the shell closes the link after it); what its
        batch did before stays done."""
        self.stats["protocol_errors"] += 1
        out.append((peer, Error(clip(str(exc), MAX_REASON))))

    def on_paused(self) -> None:
        """This scheduler was paused (the shell saw a timer wake up late): a node monitor's link not heard
        from since is not taken for live when another registers under its id (module docstring)."""
        self.membership.on_paused()

    def on_node_lost(self, peer: Hashable) -> Outbox:
        """The node monitor behind `peer` disconnected or went silent."""
        out: Outbox = []
        self.now = self.clock()
        self.frame_limits.pop(peer, None)
        node = self.membership.remove(peer)
        if node is None:
            return out
        self._forget_node(node, out)
        self.membership.tell_peers(out)
        return out

    def _register(self, peer: Hashable, msg: RegisterNodeMonitor, out: Outbox) -> Node | None:
        """Register the node monitor behind `peer` (None: refused, its id live elsewhere); forget the work of
        the stale links it replaced, and place the jobs that waited for a node monitor."""
        registered = self.membership.register(peer, msg, out)
        if registered is None:
            return None
        node, replaced = registered
        for other in replaced:
            self._forget_node(other, out)
        self._place_waiting(out)
        return node

    def _forget_node(self, node: Node, out: Outbox) -> None:
        """`node` is gone (membership.remove): its running tasks fail as SYSTEM, what it held is re-probed."""
        reason = f"node monitor {clip(node.node_id)!r} was lost while running the task"
        for job_id in list(node.jobs):
            job = self.jobs.get(job_id)
            if job is not None:
                for task in [t for t, w in job.running.items() if w == node.worker]:
                    del job.running[task]
                    self._deliver(job, task, failed(reason, SYSTEM), out, node.node_id)
        self._reprobe_held_by(node, out)

    def _reprobe_held_by(self, node: Node, out: Outbox) -> None:
        """Forget the reservations `node` held; re-probe the jobs left with none for unlaunched tasks."""
        for job_id in list(node.jobs):  # a job that fails for want of node monitors leaves the set
            job = self.jobs.get(job_id)
            if job is not None and job_id in self.table:
                self.table.drop_worker(job_id, node.worker)
                self.reprobe_if_starved(job, out)

    def _fitting(
        self, job: _Job, tasks: np.ndarray | None, candidates: np.ndarray, out: Outbox
    ) -> tuple[np.ndarray, np.ndarray | None, int] | None:
        """(candidates, tasks, need): `candidates` narrowed to the node monitors whose link takes the
        largest payload of `tasks` (None: every task), `need` bytes. A task that no candidate's link
        takes fails alone (TOO_LARGE) and leaves `tasks`. None: no task is left to place."""
        sizes = np.array([self.frame_limits.get(self._by_worker[w].peer, self.max_frame) for w in candidates.tolist()])
        largest = int(sizes.max())
        need = 0
        failed_any = False
        for task in range(len(job.payloads)) if tasks is None else tasks.tolist():
            payload = job.payloads[task]
            if payload is None or job.done[task]:
                continue
            size = len(payload)
            problem = too_large("the task's payload", size, largest, "of every node monitor that may run it")
            if problem is None:
                need = max(need, size + MESSAGE_OVERHEAD)
                continue
            self.stats["too_large"] += 1
            failed_any = True
            job.payloads[task] = None
            self._deliver(job, task, failed(problem, TOO_LARGE), out)
            if job.job_id not in self.jobs:  # that was the job's last outcome
                return None
        if failed_any:
            self._finish_in_table_if_done(job)
            if job.job_id not in self.table:
                return None
            tasks = self._unlaunched(job)
        return candidates[sizes >= need], tasks, need

    # -- clients ----------------------------------------------------------------------------------

    def on_client_messages(self, peer: Hashable, msgs: list) -> Outbox:
        out: Outbox = []
        self.now = self.clock()
        for msg in msgs:
            kind = type(msg)
            if kind is SubmitJob:
                self._submit(peer, msg, out)
            elif kind is Heartbeat:
                out.append((peer, _ECHO))
            elif kind is CancelJob:
                self._cancel(peer, msg, out)
            elif kind is StatusRequest:
                out.append((peer, self.status(_viewer(peer))))
            elif kind is TasksRequest:
                out.append((peer, self.tasks(peer, msg)))
            else:
                self._violation(peer, ProtocolError(f"{kind.__name__} is not allowed from a client"), out)
                break
        return out

    def status(self, user: str | None = None) -> StatusReply:
        """What this scheduler knows: its node monitors, its jobs in flight (only `user`'s, if given),
        its counters."""
        nodes = self.membership.statuses()
        jobs = []
        for job_id, job in sorted(self.jobs.items()):
            if user is not None and job.user != user:
                continue
            unlaunched = len(self.table.unlaunched(job_id)) if job_id in self.table else 0
            n = len(job.done)
            jobs.append(JobStatus(job_id, job.user, job.priority, n, n - unlaunched, len(job.running), job.n_done))
        return StatusReply(self.scheduler_id, nodes, jobs, dict(self.stats))

    def tasks(self, peer: Hashable, msg: TasksRequest) -> TasksReply:
        """The recorded tasks `msg` asks for that the client `peer` may see, newest first, as many as its link
        takes: a user's client asking for another user's tasks gets none."""
        viewer = _viewer(peer)
        user = msg.user or viewer
        if viewer is not None and user != viewer:
            return TasksReply(self.scheduler_id, [])
        found = self.history.query(user, msg.failed, msg.job_id, msg.since, msg.limit)
        room = self.frame_limits.get(peer, self.max_frame) - MESSAGE_OVERHEAD
        return TasksReply(self.scheduler_id, fitting(found, room))

    def on_client_connected(self, peer: Hashable, client_id: str) -> None:
        """The client `client_id` is connected behind `peer` (a lost one with this id and user is back)."""
        # the session's user: its certificate's; None (any) for an admin, whose jobs may run as any user, or
        # without a certificate (the insecure mode, where users are not authenticated): as whose jobs it sees
        self.client_ids[peer] = (client_id, _viewer(peer))

    def on_client_lost(self, peer: Hashable) -> Outbox:
        """The client behind `peer` is gone: drop its jobs and cancel their reservations; its running
        tasks are stopped `client_grace` seconds from now unless it is back by then (`on_timer`)."""
        out: Outbox = []
        self.now = self.clock()
        self.frame_limits.pop(peer, None)
        session = self.client_ids.pop(peer, None)
        running = []
        for job_id in self.clients.get(peer, ()):
            running += [(worker, job_id, task) for task, worker in self.jobs[job_id].running.items()]
        if running or (session and session[0]):  # its values are released then, too (ReleaseSession)
            self.orphans.append((self.clock() + self.client_grace, session, running))
        for job_id in self.clients.pop(peer, ()):
            job = self.jobs.pop(job_id)
            self._refs.pop((peer, job.ref), None)
            self.waiting.pop(job_id, None)
            self._cancel_everywhere(job, out)
        self.unfinished.pop(peer, None)
        return out

    def on_timer(self) -> Outbox:
        """Fail the jobs that waited `placement_timeout` for a node monitor (their unlaunched tasks), and
        stop the running tasks of clients lost `client_grace` ago that are not back."""
        out: Outbox = []
        self.now = self.clock()
        if self.orphans:
            self._stop_orphans(out)
        if self.waiting:
            now = self.clock()
            for job_id, (deadline, reason) in list(self.waiting.items()):
                if now >= deadline and job_id in self.waiting:
                    del self.waiting[job_id]
                    job = self.jobs.get(job_id)
                    if job is not None:
                        self._abandon(job, f"{reason} (waited {self.placement_timeout:g} s)", out)
        return out

    @property
    def timers_due(self) -> bool:
        """Whether `on_timer` has anything to check."""
        return bool(self.waiting or self.orphans)

    def _stop_orphans(self, out: Outbox) -> None:
        now = self.clock()
        back = set(self.client_ids.values())
        while self.orphans and self.orphans[0][0] <= now:  # in order of loss: deadlines ascend
            _, session, running = self.orphans.pop(0)
            if session is not None and session in back:
                continue  # it came back: its tasks' outcomes are dropped as they come
            if session and session[0]:  # the values its tasks left at node monitors (only its user's)
                self.stats["sessions_released"] += 1
                out.extend((node.peer, ReleaseSession(*session)) for node in self.nodes.values())
            for worker, job_id, task in running:
                node = self._by_worker.get(worker)
                if node is None:
                    continue  # lost meanwhile: the slot went with it
                if node.can_stop:
                    self.stats["orphans_stopped"] += 1
                    out.append((node.peer, StopTask(job_id, task)))
                else:
                    self.stats["orphans_left_running"] += 1

    def _cancel(self, client: Hashable, msg: CancelJob, out: Outbox) -> None:
        """The client cancels tasks of its job `msg.ref`: each gets a CANCELLED outcome now; those not
        launched never are, running ones are stopped with `force` (else their result is dropped)."""
        job = self.jobs.get(self._refs.get((client, msg.ref), -1))
        if job is None:
            return  # finished or rejected meanwhile: a normal race
        self.stats["cancels"] += 1
        tasks = range(len(job.done)) if msg.tasks is None else [t for t in msg.tasks if t < len(job.done)]
        for task in tasks:
            if job.done[task] or (msg.pending_only and task in job.running):
                continue
            worker = job.running.pop(task, None)
            if worker is not None and msg.force:
                node = self._by_worker.get(worker)
                if node is not None:
                    out.append((node.peer, StopTask(job.job_id, task)))
            job.payloads[task] = None
            self._deliver(job, task, failed("cancelled by its client", CANCELLED), out)
        if job.job_id in self.jobs and msg.tasks is None and not msg.pending_only:
            self.waiting.pop(job.job_id, None)
            self._cancel_everywhere(job, out)

    def _submit(self, client: Hashable, msg: SubmitJob, out: Outbox) -> None:
        probe_ratio = self.probe_ratio if msg.probe_ratio is None else msg.probe_ratio
        reason = job_problem(
            len(msg.tasks),
            msg.user,
            msg.priority,
            probe_ratio,
            msg.constraint,
            msg.task_constraints,
            msg.timeout,
            msg.task_prefer,
            msg.sampling,
            msg.resources,
        )
        user, refusal = _job_user(client, msg.user)
        if reason is None:
            reason = refusal
        if reason is None and self.unfinished[client] + len(msg.tasks) > self.max_client_tasks:
            reason = (
                f"this client has {self.unfinished[client]} unfinished tasks here; {len(msg.tasks)} more would pass "
                f"the scheduler's max_client_tasks of {self.max_client_tasks}"
            )
        if reason is None and msg.timeout and not self.membership.any_can_stop():
            reason = (
                f"timeout={msg.timeout:g}: none of this scheduler's node monitors can stop a running task (they run "
                f"tasks in threads); submit without a timeout, or add node monitors with process executors"
            )
        if reason is not None:
            self.stats["jobs_rejected"] += 1
            out.append((client, JobRejected(msg.ref, reason)))
            return
        job_id = self._next_job
        self._next_job += 1
        session = self.client_ids.get(client)
        job = _Job(job_id, client, msg, probe_ratio, user, "" if session is None else session[0], self.now)
        self.jobs[job_id] = job
        self.clients.setdefault(client, set()).add(job_id)
        self._refs[(client, msg.ref)] = job_id
        self.unfinished[client] += len(msg.tasks)
        job.stealable = (
            self.membership.stealers > 0
            and job.constraint is None
            and msg.task_prefer is None
            and (msg.task_constraints is None or all(c is None for c in msg.task_constraints))
            and self.membership.link_floor() >= self.max_frame
        )
        self.stats["jobs"] += 1
        self.stats["tasks"] += len(msg.tasks)
        self.stats["bytes_from_clients"] += sum(map(len, msg.tasks))
        out.append((client, JobAccepted(msg.ref, job_id)))
        own = None
        if msg.task_constraints is not None and any(c is not None for c in msg.task_constraints):
            own = [None if c is None else self.membership.eligible_workers(c) for c in msg.task_constraints]
            unplaceable = next((t for t, c in enumerate(own) if c is not None and len(c) == 0), None)
            if unplaceable is not None:
                self._abandon(job, f"no live node monitor satisfies the constraint of task {unplaceable}", out)
                return
            job.task_offsets = np.cumsum([0] + [0 if c is None else len(c) for c in own], dtype=np.int64)
            job.task_candidates = np.concatenate([c for c in own if c is not None])
        preferred = None
        if msg.task_prefer is not None:
            preferred = self.membership.preferred_workers(msg.task_prefer)
        if preferred is not None:
            ordered = [sorted(p) for p in preferred]
            job.preferred = preferred
            job.prefer_offsets = np.cumsum([0] + [len(p) for p in ordered], dtype=np.int64)
            job.prefer = np.fromiter((w for p in ordered for w in p), dtype=np.int64, count=int(job.prefer_offsets[-1]))
            self.stats["preferring_tasks"] += sum(1 for p in preferred if p)
            self.table.add_job(job_id, len(msg.tasks), own, ordered, job.per_task)
        elif job.per_task:
            self.table.add_job(job_id, len(msg.tasks), own, None, True)
        else:
            self.table.add_job(job_id, len(msg.tasks), own)
        self._probe(job, None, out)

    # -- probing and late binding -----------------------------------------------------------------

    def _probe(self, job: _Job, tasks: np.ndarray | None, out: Outbox) -> None:
        """Send reservations for `tasks` (None = every task) of `job`: one message per node monitor."""
        job_id = job.job_id
        candidates = self.membership.eligible_workers(job.constraint)
        if len(candidates) == 0:
            what = "" if job.constraint is None else " satisfies the job's constraint"
            self._unplaceable(job, "no live node monitor" + what, out)
            return
        if job.resources is not None:
            candidates = self.membership.holding(candidates, job.resources)
            if len(candidates) == 0:
                self._unplaceable(job, self.membership.too_big(job.resources), out)
                return
        need = 0
        if self.membership.link_floor() < self.max_frame:  # some link takes less than others: place by size
            fitting = self._fitting(job, tasks, candidates, out)
            if fitting is None:
                return
            candidates, tasks, need = fitting
        try:
            workers, made_for = sparrow_core.sample_job(
                self.rng,
                self.membership.next_worker,
                len(job.payloads),
                job.probe_ratio,
                candidates,
                job.task_candidates,
                job.task_offsets,
                tasks,
                job.prefer,
                job.prefer_offsets,
                job.per_task,
            )
        except sparrow_core.InfeasibleTaskError as exc:
            also = "" if job.constraint is None else " and the job's"
            if need:
                also += f", among those whose link takes frames of {need} bytes (the job's largest task)"
            self._abandon(job, f"no live node monitor satisfies the constraint of task {exc.task}{also}", out)
            return
        self.table.reserve(job_id, workers, made_for)
        self.stats["probes"] += len(workers)
        if self.placements is not None:
            self.placements.record(job_id, [self._by_worker[w].node_id for w in workers.tolist()])
        by_worker = self._by_worker
        placed = [(by_worker[worker], count) for worker, count in _per_worker(workers)]
        if self.bind_idle and job.resources is None:  # a task with resources launches where they fit, when they do
            placed = self._bind_to_idle(job, placed, len(job.payloads) if tasks is None else len(tasks), out)
            if job_id not in self.table:  # every task went with a reservation (or failed): none is left to ask
                return
        for node, count in placed:
            node.jobs.add(job_id)
            job.probed.add(node.worker)
            if count:
                out.append(
                    (
                        node.peer,
                        EnqueueReservations(
                            job_id, job.user, job.priority, count, job.session, job.stealable, job.resources
                        ),
                    )
                )
        if self.bind_idle:  # a reservation consumed where the kernel had no task for it leaves none to ask
            self.reprobe_if_starved(job, out)

    def _bind_to_idle(
        self, job: _Job, placed: list[tuple[Node, int]], unlaunched: int, out: Outbox
    ) -> list[tuple[Node, int]]:
        """Bind tasks of `job` (`unlaunched` of them to place) at once to the probed node monitors believed idle
        (`_free_slots`), up to their reservations and free slots: each such reservation is consumed here
        (TaskTable.get_task), and its task goes unasked (TaskToNode.bound) instead. Returns each probed node with
        the reservations left to send it; once every task is launched, none (the job leaves the table)."""
        job_id = job.job_id
        left = []
        consumed = False
        for node, count in placed:
            worker = node.worker
            free = self._bound_share(node, count, unlaunched) if job_id in self.table else 0
            sent = 0
            while sent < free:
                task = self.table.get_task(job_id, worker)
                sent += 1  # that reservation is consumed, whatever the answer
                consumed = True
                if task is None:
                    break
                unlaunched -= 1
                if job.done[task]:  # cancelled before it launched: never launched
                    continue
                if self.placements is not None:  # as a GetTask's answer would be (placement_log.py)
                    self.placements.answer(job_id, task, node.node_id, False)
                self.stats["bound_with_reservations"] += 1
                node.jobs.add(job_id)  # its loss fails the task (_forget_node)
                job.probed.add(worker)
                if not self._hand_out(node, job, task, out, bound=True) and job_id not in self.table:
                    return []  # that was the job's last outcome
            left.append((node, count - sent))
        if consumed and self.table.all_launched(job_id):
            self.table.remove_job(job_id)  # no reservation was sent: none to cancel
        return left

    def _holds_ours(self, node: Node) -> bool:
        """Whether `node` runs or holds anything of this scheduler's: a task whose outcome it has not
        reported, or a live job's reservations (or tasks). Drops the finished jobs from node.jobs."""
        if node.running:
            return True
        jobs = node.jobs
        if jobs:
            live = self.jobs
            gone = [job_id for job_id in jobs if job_id not in live]
            jobs.difference_update(gone)
        return bool(jobs)

    def _free_slots(self, node: Node) -> int:
        """The slots of `node` this scheduler believes free with nothing queued (0 unless it holds nothing
        of ours and its last heartbeat that could tell showed no other scheduler's work). Stale beliefs are
        safe: a bound task that finds its node monitor busy waits there for a slot, ahead of its queue."""
        if node.others or self._holds_ours(node):
            return 0
        return node.slots

    def _span_outcome(self, node: Node) -> None:
        """An outcome from `node` (bind_idle): once its busy span ends (nothing of ours running there), its time
        per task joins the recent ones (`Node.short`: each of the last RECENT_SPANS under SHORT_TASK). That is
        the time from the span's first outcome to its last over the tasks after the first: the round trip before
        the first outcome is not the tasks' time (under load it alone is several ms). A span of one task is all
        round trip and task: it counts as short if even that was under SHORT_TASK, and says nothing otherwise."""
        node.span_tasks += 1
        if node.running:
            if node.span_tasks == 1:
                node.span_first = self.clock()
            return  # a busy node's outcomes (a map's) cost no clock read but its span's first
        now = self.clock()
        if node.span_tasks == 1:
            node.span_first = now
        if node.span_tasks > 1:
            per_task = (now - node.span_first) / (node.span_tasks - 1)
        elif now - node.span_since < SHORT_TASK:
            per_task = now - node.span_since
        else:
            return
        recent = node.recent_spans
        recent.append(per_task)
        node.short = max(recent) < SHORT_TASK
        node.lately = max(recent[-i] for i in range(1, min(len(recent), TINY_SPANS) + 1))

    def _bound_share(self, node: Node, count: int, unlaunched: int) -> int:
        """How many of a job's `count` reservations at `node` to consume at once with their tasks (_bind_to_idle),
        `unlaunched` of its tasks being left to place: none unless it is believed idle; its free slots; and while
        each of its recent busy spans took under SHORT_TASK per task (`Node.short`: the node monitor's own
        pipelining gate, seen from here), also half of the rest, as a pipelined node monitor there would ask ahead
        at once (its half rule), BIND_AHEAD per slot at most. So a small job of short tasks on an idle cluster
        starts with no GetTask round trip at all. A tiny job goes whole to the first such node that holds a
        reservation for each of its tasks: at most TINY_JOB_TASKS per free slot, which by the node's time per task
        in its last TINY_SPANS spans (`Node.lately`) would take at most TINY_JOB_WORK in all (no-op tasks:
        docs/runtime-services.md, "A tiny job on one node monitor"). Split, each node monitor and its worker would
        wake for a few microseconds of work; on a machine of few cores the processes woken cost more than the tasks. The
        last spans, not all 8 of `short`: a map's spans show its node's throughput under the whole map's load
        (400 us per no-op task on 2 cores), which would keep every job split for 8 jobs after it."""
        free = self._free_slots(node)
        if not free or count <= free:
            return min(count, free)
        if not node.short:
            return free
        if unlaunched <= min(count, free * TINY_JOB_TASKS) and unlaunched * node.lately <= TINY_JOB_WORK:
            return unlaunched
        return min(count, free + (count - free) // 2, free * (BIND_AHEAD + 1))

    def _get_task(self, node: Node, job_id: int, out: Outbox, origin: str = "") -> None:
        """`node` asks for a task of `job_id` for a reservation of its own, or (stolen) of the node monitor
        `origin`: that one's reservation is consumed, the task runs at `node`."""
        self.stats["get_task"] += 1
        job = self.jobs.get(job_id)
        task = None
        worker: int | None = node.worker
        if origin and origin != node.node_id:
            worker = self._stolen_from(node, job, job_id, origin)
        if job is not None and job_id in self.table and worker is not None:
            task = self.table.get_task(job_id, worker)
            if task is not None and job.done[task]:  # cancelled before it launched: never launched
                task = None
                self._finish_in_table_if_done(job)
        if self.placements is not None:  # each answer, for the experiment's round trips (placement_log.py)
            stolen = bool(origin) and origin != node.node_id
            self.placements.answer(job_id, task, node.node_id, stolen, origin if stolen else "")
        if job is None or task is None:
            self.stats["no_task"] += 1
            out.append((node.peer, NoTask(job_id)))
            if job is not None:
                self.reprobe_if_starved(job, out)
            return
        if not self._hand_out(node, job, task, out, stolen=worker != node.worker):  # the slot that asked gets nothing
            out.append((node.peer, NoTask(job_id)))
            if job_id not in self.table:  # that was the job's last outcome
                return
        if self.table.all_launched(job_id):
            for worker in self.table.workers_to_cancel(job_id).tolist():
                holder = self._by_worker.get(worker)
                if holder is not None:
                    self.stats["cancel_messages"] += 1
                    out.append((holder.peer, CancelReservations(job_id)))
            self.table.remove_job(job_id)
        else:  # that was its last reservation (others were lost) but not its last task
            self.reprobe_if_starved(job, out)

    def _hand_out(
        self, node: Node, job: _Job, task: int, out: Outbox, *, stolen: bool = False, bound: bool = False
    ) -> bool:
        """Send task `task` of `job` (its reservation consumed: `stolen`, another node monitor's) to `node` to run
        (`bound`: unasked, with the job's reservations), or fail it alone (TOO_LARGE) if its link does not take
        it. Returns whether it was sent."""
        job_id = job.job_id
        payload = job.payloads[task]
        assert payload is not None  # cleared only once its outcome is delivered (kept for a give-back: give_back.py)
        limit = self.frame_limits.get(node.peer, self.max_frame)
        if len(payload) + MESSAGE_OVERHEAD > limit:  # the text only when it is needed (a hot path)
            problem = too_large(
                "the task's payload", len(payload), limit, f"of the link to node monitor {clip(node.node_id)!r}"
            )
            assert problem is not None  # over the limit: too_large names it
            self.stats["too_large"] += 1
            self._deliver(job, task, failed(problem, TOO_LARGE), out)
            return False
        job.running[task] = node.worker
        job.launched_at[task] = self.now
        job.attempts[task] += 1
        if not node.running and self.bind_idle:  # a busy span of that node starts (_bound_share)
            node.span_since = self.clock()
            node.span_tasks = 0
        node.running += 1
        if stolen:  # its loss must fail the task (_forget_node), cleanup (_finish)
            node.jobs.add(job_id)
            job.probed.add(node.worker)
        self.stats["launched"] += 1
        self.stats["bytes_to_node_monitors"] += len(payload)
        if job.preferred is not None and job.preferred[task]:
            self.stats["launched_preferred" if node.worker in job.preferred[task] else "launched_not_preferred"] += 1
        if bound:
            out.append((node.peer, TaskToNode(job_id, task, payload, job.timeout, True, job.user, job.session)))
        else:
            out.append((node.peer, TaskToNode(job_id, task, payload, job.timeout)))
        if job.report_started:
            out.append((job.client, TaskStarted(job.ref, task)))
        return True

    def _stolen_from(self, node: Node, job: _Job | None, job_id: int, origin: str) -> int | None:
        """The worker of the node monitor `origin` whose reservation `node` stole (None: it is gone, and
        its reservations with it). A job whose reservations may not move, or whose request the asker's capacity
        does not hold, is a protocol error."""
        self.stats["get_task_stolen"] += 1
        if job is not None and not job.stealable:
            raise ProtocolError(
                f"GetTask for job {job_id} on behalf of {clip(origin)!r}: its reservations may not move"
            )
        if (
            job is not None
            and job.resources is not None
            and not len(self.membership.holding(np.array([node.worker], dtype=np.int64), job.resources))
        ):
            raise ProtocolError(
                f"GetTask for job {job_id} on behalf of {clip(origin)!r}: its request "
                f"{format_resources(job.resources)} is over this node monitor's capacity"
            )
        held = self.membership.named(origin)
        return None if held is None else held.worker

    def issued(self, job_id: int) -> bool:
        """Whether this scheduler ever had job `job_id` (give-back tells a stale GiveBack from a lie by it)."""
        return job_id < self._next_job

    def reprobe_if_starved(self, job: _Job, out: Outbox) -> None:
        """Probe again for the job's unlaunched tasks if no reservation of it is outstanding."""
        job_id = job.job_id
        if job_id in self.table and self.table.outstanding(job_id) == 0:
            unlaunched = self._unlaunched(job)
            if len(unlaunched):
                self.stats["reprobes"] += 1
                self._probe(job, unlaunched, out)

    def _unlaunched(self, job: _Job) -> np.ndarray:
        """The job's tasks not launched yet and not cancelled (its table entry must exist)."""
        unlaunched = self.table.unlaunched(job.job_id)
        if job.n_done:
            unlaunched = unlaunched[np.frombuffer(job.done, dtype=np.uint8)[unlaunched] == 0]
        return unlaunched

    def _task_finished(self, node: Node, msg: OutcomeToScheduler, out: Outbox) -> None:
        if node.running:  # a stale outcome, too, is of a task that ran there and ended
            node.running -= 1
            if self.bind_idle:
                self._span_outcome(node)
        job = self.jobs.get(msg.job_id)
        if job is None or job.running.get(msg.task) != node.worker:
            self.stats["stale_outcomes"] += 1  # its job was dropped, or it was already reported lost
            return
        del job.running[msg.task]
        self.stats["bytes_from_node_monitors"] += len(msg.outcome.payload) + len(msg.outcome.error)
        self._deliver(job, msg.task, msg.outcome, out, node.node_id)

    # -- outcomes ---------------------------------------------------------------------------------

    def _deliver(self, job: _Job, task: int, outcome: Outcome, out: Outbox, node_id: str = "") -> None:
        """Send task `task`'s outcome to its client and record it (`node_id`: where it ran, "" if nowhere)."""
        if job.done[task]:
            return
        job.done[task] = 1
        job.payloads[task] = None
        job.n_done += 1
        self.unfinished[job.client] -= 1
        self.stats["outcomes"] += 1
        limit = self.frame_limits.get(job.client, self.max_frame)
        size = len(outcome.payload) + len(outcome.error)
        problem = too_large("the task's outcome", size, limit, "of the link to its client")
        if problem is not None:  # it fails alone, once; the link stays
            self.stats["too_large"] += 1
            outcome = failed(problem, TOO_LARGE)
            size = len(outcome.error)
        self.stats["bytes_to_clients"] += size
        last = job.n_done == len(job.done)
        out.append((job.client, OutcomeToClient(job.ref, task, outcome, last)))
        now = self.now
        ok = outcome.ok
        self.history.add(
            TaskEntry(
                job.job_id,
                task,
                job.user,
                ok,
                outcome.failure,
                "" if ok else error_summary(outcome.error),
                node_id,
                job.attempts[task],
                job.submitted,
                job.launched_at[task] if node_id else now,
                now,
            )
        )
        if last:
            self._finish(job)

    def _finish_in_table_if_done(self, job: _Job) -> None:
        """Drop the job's table entry once no task of it is left to launch (the rest were cancelled)."""
        job_id = job.job_id
        if job_id in self.table and all(job.done[t] for t in self.table.unlaunched(job_id).tolist()):
            self.table.remove_job(job_id)

    def _finish(self, job: _Job) -> None:
        job_id = job.job_id
        del self.jobs[job_id]
        self.waiting.pop(job_id, None)
        self._refs.pop((job.client, job.ref), None)
        owned = self.clients.get(job.client)
        if owned is not None:
            owned.discard(job_id)
        if job_id in self.table:
            self.table.remove_job(job_id)
        for worker in job.probed:
            node = self._by_worker.get(worker)
            if node is not None:
                node.jobs.discard(job_id)

    def _abandon(self, job: _Job, reason: str, out: Outbox) -> None:
        """Fail every task of `job` not launched yet with `reason`; running tasks still report."""
        self.stats["abandoned"] += 1
        job_id = job.job_id
        if job_id in self.table:
            unlaunched = self.table.unlaunched(job_id).tolist()
            self._cancel_everywhere(job, out)
        else:
            unlaunched = [t for t in range(len(job.done)) if not job.done[t] and t not in job.running]
        for task in unlaunched:
            job.payloads[task] = None
            self._deliver(job, task, failed(reason, UNPLACEABLE), out)

    def _unplaceable(self, job: _Job, reason: str, out: Outbox) -> None:
        """No live node monitor can take the job's unlaunched tasks now: wait for one up to
        `placement_timeout` (a node monitor registering retries it; `on_timer` gives up), or
        abandon it at once if that is 0."""
        if not self.placement_timeout:
            self._abandon(job, reason, out)
        elif job.job_id not in self.waiting:
            self.stats["waiting_for_placement"] += 1
            self.waiting[job.job_id] = (self.clock() + self.placement_timeout, reason)

    def _place_waiting(self, out: Outbox) -> None:
        """A node monitor joined: probe again for the jobs that were waiting for one."""
        for job_id in list(self.waiting):
            job = self.jobs.get(job_id)
            if job is not None and job_id in self.table:
                deadline_reason = self.waiting.pop(job_id)
                self._probe(job, self._unlaunched(job), out)
                if job_id in self.waiting:  # still unplaceable: keep its first deadline
                    self.waiting[job_id] = deadline_reason

    def _cancel_everywhere(self, job: _Job, out: Outbox) -> None:
        """Cancel the job's reservations at every live node monitor it probed and forget it in the table."""
        job_id = job.job_id
        if job_id not in self.table:
            return
        self.table.remove_job(job_id)
        for worker in job.probed:
            node = self._by_worker.get(worker)
            if node is not None:
                self.stats["cancel_messages"] += 1
                out.append((node.peer, CancelReservations(job_id)))


SMALL_PROBE_SET = 256  # probes up to which counting in Python beats np.unique (about 2 us against 14 for 2)


def _per_worker(workers: np.ndarray) -> list[tuple[int, int]]:
    """(worker, reservations there) for each distinct worker of `workers`, in worker order."""
    if len(workers) <= SMALL_PROBE_SET:
        return sorted(Counter(workers.tolist()).items())
    where, counts = np.unique(workers, return_counts=True)
    return list(zip(where.tolist(), counts.tolist(), strict=True))


def _job_user(client: Hashable, named: str) -> tuple[str, str | None]:
    """The user a job of `client` naming `named` runs as, and the reason to reject it (or None): a
    client authenticated by certificate runs as its user (an admin as the one it names)."""
    identity = getattr(client, "identity", None)
    if identity is None or identity.admin:
        return named, None
    if named and named != identity.user:
        return (
            named,
            f"this client is authenticated as user {identity.user!r}: it may not submit a job as {clip(named)!r}",
        )
    return identity.user, None


def _viewer(client: Hashable) -> str | None:
    """Whose jobs `client` may see: its certificate's user; None (all) for an admin or without one."""
    identity = getattr(client, "identity", None)
    return None if identity is None or identity.admin else identity.user
