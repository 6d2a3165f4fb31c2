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
- jobs (scheduler_jobs.py): payloads, owner, which tasks are running where, and which outcomes were
  delivered, so every task gets exactly one outcome (`OutcomeToClient`) whatever happens to node monitors
  or clients (scheduler_outcomes.py, `outcomes`: relaying, failing, cancelling, the task history).
- placement (scheduler_placement.py, `placement`): submission, probes, reservations and late binding.
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
- a lost client: its jobs are dropped and their reservations cancelled at once; its running tasks are
  stopped, and the values its tasks left at node monitors released, once it has not come back within
  `client_grace` (scheduler_sessions.py, `sessions`: what a session is, whose values go).
- traffic: `stats` counts the bytes of task payloads and outcomes (payload and error text) it took
  from clients and node monitors and sent on (bytes_from_clients, bytes_to_node_monitors,
  bytes_from_node_monitors, bytes_to_clients): the data that passes through this scheduler.
- work stealing (services/steal.py): a node monitor registering with a `steal_address` steals; each
  such one is told the others' addresses (scheduler_nodes.py) as they come, go or drain. A job without
  constraints, preferences or a timeout, submitted while some node monitor steals (and with every link
  taking the same frames), has stealable reservations. A GetTask naming another node monitor as its
  `origin` consumes that one's reservation in the TaskTable and runs the task at the sender, so a stolen
  reservation binds at most one task, as at its origin, and the job still ends: its reservation is counted
  as answered. An origin that is gone held nothing any more (its reservations were dropped and re-probed):
  NoTask.
- tasks bound with their reservations (`bind_idle`, on by default; scheduler_idle.py, `idle`): a probed node
  monitor that this scheduler believes idle (no task of ours there whose outcome it has not reported, no live
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
- task control: a client's CancelJob ends the tasks it names as cancelled at once (scheduler_outcomes.py), a
  job's `timeout` goes to the node monitors with each TaskToNode (and
  such a job is placed only where tasks can be stopped), Heartbeats from clients are echoed, and a
  client may have at most `max_client_tasks` unfinished tasks.

Users (scheduler_sessions.py): a peer may carry an `identity` (tls.Identity, the certificate it authenticated
with over TLS). A client's job then runs as its identity's user (the fair-share user node monitors see): one
that names another user is rejected, and its StatusRequest shows only that user's jobs; an admin may name
any user and sees every job. A peer without one (the shared-secret mode, tests) names its own user and sees
every job. A client cancels only the jobs it submitted (refs are per connection).

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
from collections import Counter
from collections.abc import Callable, Hashable

import sparrow_core

from ..errors import ProtocolError
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.limits import MAX_REASON, MESSAGE_OVERHEAD, clip
from ..wire.messages import (
    CancelJob,
    Error,
    GetTask,
    GiveBack,
    Heartbeat,
    JobStatus,
    OutcomeToScheduler,
    OutputToScheduler,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TasksReply,
    TasksRequest,
)
from .arguments import check_counts, check_flags
from .give_back import GiveBacks
from .outbox import Outbox
from .placement_log import PlacementLog
from .scheduler_idle import DEFAULT_BIND_IDLE, IdleNodes
from .scheduler_jobs import Job
from .scheduler_nodes import Membership, Node
from .scheduler_outcomes import Outcomes
from .scheduler_placement import Placement
from .scheduler_sessions import Sessions, viewer
from .task_history import TaskHistory, fitting

DEFAULT_PROBE_RATIO = 2.0
DEFAULT_PLACEMENT_TIMEOUT = 5.0  # seconds a job may wait for a node monitor that can take it
DEFAULT_MAX_CLIENT_TASKS = 1_000_000  # unfinished tasks one client may have at this scheduler
DEFAULT_CLIENT_GRACE = 2.0  # seconds a lost client may take to come back before its running tasks are stopped
_ECHO = Heartbeat()


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
        self.unfinished: Counter[Hashable] = Counter()  # unfinished tasks per client
        self.waiting: dict[int, tuple[float, str]] = {}  # job id -> (deadline, why it cannot be placed)
        self.refs: dict[tuple[Hashable, int], int] = {}  # (client, ref) -> job id
        self.probe_ratio = sparrow_core.check_probe_ratio(probe_ratio)
        self.rng = sparrow_core.Rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
        self.table = sparrow_core.TaskTable()
        self.jobs: dict[int, Job] = {}
        self.clients: dict[Hashable, set[int]] = {}
        self.stats: Counter[str] = Counter()
        # the registered node monitors (scheduler_nodes.py); its two maps read directly on the hot paths
        self.membership = Membership(scheduler_id, self.stats, clock, self.rng, self.frame_limits, max_frame)
        self.nodes = self.membership.nodes
        self._by_worker = self.membership.by_worker
        self.sessions = Sessions(self.membership, self.stats, clock, client_grace)  # scheduler_sessions.py
        # how recent tasks ended (task_history.py), timed with this logic's clock: `now` is its time at the start of
        # the batch being handled (one clock read per batch, not two per task; `_batch_start` tells the parts)
        self.history = history if history is not None else TaskHistory(clock=clock)
        self.now = clock()
        # the beliefs bind_idle acts on (scheduler_idle.py), how tasks end (scheduler_outcomes.py), where they run
        # (scheduler_placement.py). The steps of the hot paths are taken as bound methods, once.
        self.idle = IdleNodes(self.jobs, clock)
        self.outcomes = Outcomes(
            self, self._by_worker, placement_timeout, self.idle.span_outcome if bind_idle else None
        )
        self.placement = Placement(self, self.membership, self.idle, self.outcomes, self.sessions.session_of)
        self.give_backs = GiveBacks(self.placement)  # a node monitor's GiveBack: the task launches again elsewhere
        self._get_task = self.placement.get_task
        self._task_finished = self.outcomes.task_finished
        self._take_back = self.give_backs.take_back
        self._cancel_everywhere = self.outcomes.cancel_everywhere

    # -- node monitors ----------------------------------------------------------------------------

    def on_node_messages(self, peer: Hashable, msgs: list) -> Outbox:
        out: Outbox = []
        node = self.nodes.get(peer)
        now = self._batch_start()
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
                    self._take_back(node, msg, out)
                elif kind is OutputToScheduler:
                    self.outcomes.task_output(node, msg, out)
                elif kind is Heartbeat:
                    node.queued, node.busy = msg.queued, msg.busy
                    if self.bind_idle:
                        self.idle.heard(node, msg)
                    out.append((peer, _ECHO))
                    if msg.draining and not node.draining:  # probe it no more; re-probe what it held
                        self.membership.drain(node)
                        self.placement.reprobe_held_by(node, out)
                else:
                    raise ProtocolError(f"{kind.__name__} is not allowed from a registered node monitor")
            except ProtocolError as exc:
                self._violation(peer, exc, out)
                break
        if self.membership.peers_changed:
            self.membership.tell_peers(out)
        return out

    def _batch_start(self) -> float:
        """Read the clock once for the batch being handled: the times of its steps (the task history's submit,
        launch and end times) are this one, in every part."""
        now = self.now = self.placement.now = self.outcomes.now = self.clock()
        return now

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
        self._batch_start()
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
        self.placement.place_waiting(out)
        return node

    def _forget_node(self, node: Node, out: Outbox) -> None:
        """`node` is gone (membership.remove): its running tasks fail as SYSTEM, what it held is re-probed."""
        self.outcomes.fail_running_on(node, out)
        self.placement.reprobe_held_by(node, out)

    # -- clients ----------------------------------------------------------------------------------

    def on_client_messages(self, peer: Hashable, msgs: list) -> Outbox:
        out: Outbox = []
        self._batch_start()
        for msg in msgs:
            kind = type(msg)
            if kind is SubmitJob:
                self.placement.submit(peer, msg, out)
            elif kind is Heartbeat:
                out.append((peer, _ECHO))
            elif kind is CancelJob:
                self.outcomes.cancel(peer, msg, out)
            elif kind is StatusRequest:
                out.append((peer, self.status(viewer(peer))))
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
        seer = viewer(peer)
        user = msg.user or seer
        if seer is not None and user != seer:
            return TasksReply(self.scheduler_id, [])
        found = self.history.query(user, msg.failed, msg.job_id, msg.since, msg.limit)
        room = self.frame_limits.get(peer, self.max_frame) - MESSAGE_OVERHEAD
        return TasksReply(self.scheduler_id, fitting(found, room))

    def on_client_connected(self, peer: Hashable, client_id: str) -> None:
        """The client `client_id` is connected behind `peer` (a lost one with this id and user is back)."""
        self.sessions.connected(peer, client_id)

    def on_client_lost(self, peer: Hashable) -> Outbox:
        """The client behind `peer` is gone: drop its jobs and cancel their reservations; its running
        tasks are stopped `client_grace` seconds from now unless it is back by then (`on_timer`)."""
        out: Outbox = []
        self._batch_start()
        self.frame_limits.pop(peer, None)
        running = []
        for job_id in self.clients.get(peer, ()):
            running += [(worker, job_id, task) for task, worker in self.jobs[job_id].running.items()]
        self.sessions.lost(peer, running)
        for job_id in self.clients.pop(peer, ()):
            job = self.jobs.pop(job_id)
            self.refs.pop((peer, job.ref), None)
            self.waiting.pop(job_id, None)
            self._cancel_everywhere(job, out)
        self.unfinished.pop(peer, None)
        return out

    def on_timer(self) -> Outbox:
        """Fail the jobs that waited `placement_timeout` for a node monitor (their unlaunched tasks), and
        stop the running tasks of clients lost `client_grace` ago that are not back."""
        out: Outbox = []
        self._batch_start()
        if self.sessions.orphans:
            self.sessions.stop_orphans(out)
        if self.waiting:
            self.outcomes.expire_waiting(out)
        return out

    @property
    def placements(self) -> PlacementLog | None:
        """Each job's probed node monitors and each GetTask's answer, if asked (placement_log.py; None: not)."""
        return self.placement.placements

    @placements.setter
    def placements(self, log: PlacementLog | None) -> None:
        self.placement.placements = log

    @property
    def timers_due(self) -> bool:
        """Whether `on_timer` has anything to check."""
        return bool(self.waiting or self.sessions.orphans)
