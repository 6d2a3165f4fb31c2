"""The scheduler's decisions, sans-I/O: messages in, `(peer, message)` pairs out. No sockets, no trio.

Peers are opaque hashable handles chosen by the caller (the trio shell passes its Connection objects,
tests pass strings). Every decision a kernel makes is made by the kernel: probe selection by
`sparrow_core.sample_job` (a job constraint and per-task constraints together), late binding and
cancellation by `TaskTable`. This class adds only bookkeeping around them:

- node monitors: each registered one gets a worker id (never reused); a job's candidates are the ids of
  the live node monitors satisfying its constraint, a task's those satisfying its own (fixed at
  submission); the kernel keeps a task to those that are also the job's.
- jobs: payloads, owner, which tasks are running where, and which outcomes were delivered, so every
  task gets exactly one outcome (`TaskResult`) whatever happens to node monitors or clients.
- re-probing: a job whose reservations are all consumed or lost while tasks remain unlaunched
  (`TaskTable.outstanding == 0` and `unlaunched` not empty) is probed again for those tasks.
- a lost node monitor: its reservations are dropped (and re-probed as above), and the tasks running
  there are reported failed (not re-run: a task may have side effects).
- a job that cannot be placed (no live node monitor satisfies its constraints, or a task's constraint
  together with the job's) fails its unlaunched tasks at once with that reason instead of waiting.

Error handling: a message not allowed from a peer (a client sending GetTask, a node monitor sending
anything before RegisterNodeMonitor) raises ProtocolError; the shell answers Error and closes that
connection. An invalid job is answered with JobRejected and changes nothing. Messages about jobs or
tasks that are already finished are normal races and are ignored.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Hashable

import numpy as np
import sparrow_core

from .errors import ProtocolError
from .messages import (
    CancelReservations,
    Constraint,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    JobAccepted,
    JobRejected,
    JobStatus,
    NodeStatus,
    NoTask,
    Registered,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
    SubmitJob,
    TaskFinished,
    TaskLaunch,
    TaskResult,
)

DEFAULT_PROBE_RATIO = 2.0
_ECHO = Heartbeat()


class _Node:
    __slots__ = ("peer", "worker", "node_id", "slots", "labels", "jobs", "queued", "busy", "heard", "draining")

    def __init__(self, peer: Hashable, worker: int, reg: RegisterNodeMonitor, now: float) -> None:
        self.peer = peer
        self.worker = worker
        self.node_id = reg.node_id
        self.slots = reg.slots
        self.labels = frozenset(reg.labels)
        self.jobs: set[int] = set()  # jobs that probed this node (pruned lazily)
        self.queued = 0  # as of its last heartbeat
        self.busy = 0
        self.heard = now  # when its last message batch arrived
        self.draining = False  # it takes no more reservations: not probed any more

    def satisfies(self, constraint: Constraint) -> bool:
        if constraint.node_monitors and self.node_id not in constraint.node_monitors:
            return False
        return self.labels.issuperset(constraint.labels)


class _Job:
    __slots__ = (
        "job_id", "client", "ref", "payloads", "user", "priority", "probe_ratio", "constraint",
        "task_candidates", "task_offsets", "done", "n_done", "running", "probed",
    )  # fmt: skip

    def __init__(self, job_id: int, client: Hashable, msg: SubmitJob, probe_ratio: float) -> None:
        self.job_id = job_id
        self.client = client
        self.ref = msg.ref
        self.payloads: list[bytes | None] = list(msg.tasks)
        self.user = msg.user
        self.priority = msg.priority
        self.probe_ratio = probe_ratio
        self.constraint = msg.constraint
        # per-task constraints as the workers satisfying them at submission, flat: task t's are
        # task_candidates[task_offsets[t]:task_offsets[t + 1]] (empty: unconstrained); None: no task constrained
        self.task_candidates: np.ndarray | None = None
        self.task_offsets: np.ndarray | None = None
        self.done = bytearray(len(msg.tasks))
        self.n_done = 0
        self.running: dict[int, int] = {}  # task -> worker
        self.probed: set[int] = set()  # workers that got reservations


class SchedulerLogic:
    """The state and decisions of one scheduler. Each `on_*` method returns the messages to send.

    `clock` (seconds) only dates the node monitors' last messages, for StatusReply.
    """

    def __init__(
        self,
        *,
        scheduler_id: str = "scheduler",
        probe_ratio: float = DEFAULT_PROBE_RATIO,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scheduler_id = scheduler_id
        self.clock = clock
        self.probe_ratio = sparrow_core.check_probe_ratio(probe_ratio)
        self.rng = sparrow_core.Rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
        self.table = sparrow_core.TaskTable()
        self.nodes: dict[Hashable, _Node] = {}  # registered node monitors by peer
        self.jobs: dict[int, _Job] = {}
        self.clients: dict[Hashable, set[int]] = {}
        self.stats: Counter[str] = Counter()
        self._by_worker: dict[int, _Node] = {}
        self._next_worker = 0
        self._next_job = 1
        self._eligible: dict[Constraint | None, np.ndarray] = {}  # cache of _eligible_workers

    # -- node monitors ----------------------------------------------------------------------------

    def on_node_messages(self, peer: Hashable, msgs: list) -> list:
        out: list = []
        node = self.nodes.get(peer)
        if node is not None:
            node.heard = self.clock()
        for msg in msgs:
            kind = type(msg)
            if node is None:
                if kind is not RegisterNodeMonitor:
                    raise ProtocolError(f"{kind.__name__} before RegisterNodeMonitor")
                node = self._register(peer, msg, out)
            elif kind is GetTask:
                self._get_task(node, msg.job_id, out)
            elif kind is TaskFinished:
                self._task_finished(node, msg, out)
            elif kind is Heartbeat:
                node.queued, node.busy = msg.queued, msg.busy
                out.append((peer, _ECHO))
                if msg.draining and not node.draining:
                    self._drain_node(node, out)
            else:
                raise ProtocolError(f"{kind.__name__} is not allowed from a registered node monitor")
        return out

    def on_node_lost(self, peer: Hashable) -> list:
        """The node monitor behind `peer` disconnected or went silent."""
        out: list = []
        node = self.nodes.pop(peer, None)
        if node is None:
            return out
        self._forget_node(node, out)
        return out

    def _register(self, peer: Hashable, msg: RegisterNodeMonitor, out: list) -> _Node:
        if msg.slots < 1:
            raise ProtocolError(f"RegisterNodeMonitor.slots must be >= 1, got {msg.slots}")
        node = _Node(peer, self._next_worker, msg, self.clock())
        self._next_worker += 1
        self.nodes[peer] = node
        self._by_worker[node.worker] = node
        self._invalidate_live()
        self.stats["node_monitors_registered"] += 1
        out.append((peer, Registered(self.scheduler_id)))
        for other_peer, other in list(self.nodes.items()):
            if other.node_id == msg.node_id and other_peer != peer:  # it reconnected: the old link is stale
                del self.nodes[other_peer]
                self._forget_node(other, out)
        return node

    def _forget_node(self, node: _Node, out: list) -> None:
        del self._by_worker[node.worker]
        self._invalidate_live()
        self.stats["node_monitors_lost"] += 1
        reason = f"node monitor {node.node_id!r} was lost while running the task"
        for job_id in node.jobs:
            job = self.jobs.get(job_id)
            if job is not None:
                for task in [t for t, w in job.running.items() if w == node.worker]:
                    del job.running[task]
                    self._deliver(job, task, False, b"", reason, out)
        self._reprobe_held_by(node, out)

    def _drain_node(self, node: _Node, out: list) -> None:
        """The node monitor drains: probe it no more, and re-probe what it held (its running tasks
        still report)."""
        node.draining = True
        self._invalidate_live()
        self.stats["node_monitors_draining"] += 1
        self._reprobe_held_by(node, out)

    def _reprobe_held_by(self, node: _Node, out: list) -> None:
        """Forget the reservations `node` held; re-probe the jobs left with none for unlaunched tasks."""
        for job_id in list(node.jobs):  # a job that fails for want of node monitors leaves the set
            job = self.jobs.get(job_id)
            if job is not None and job_id in self.table:
                self.table.drop_worker(job_id, node.worker)
                self._reprobe_if_starved(job, out)

    def _invalidate_live(self) -> None:
        self._eligible.clear()

    def _eligible_workers(self, constraint: Constraint | None) -> np.ndarray:
        """The worker ids, ascending, of the live node monitors (not draining) satisfying `constraint`
        (None: all of them); cached until a node monitor comes, goes or drains."""
        found = self._eligible.get(constraint)
        if found is None:
            found = np.array(
                sorted(n.worker for n in self.nodes.values()
                       if not n.draining and (constraint is None or n.satisfies(constraint))),
                dtype=np.int64,
            )
            self._eligible[constraint] = found
        return found

    # -- clients ----------------------------------------------------------------------------------

    def on_client_messages(self, peer: Hashable, msgs: list) -> list:
        out: list = []
        for msg in msgs:
            kind = type(msg)
            if kind is SubmitJob:
                self._submit(peer, msg, out)
            elif kind is StatusRequest:
                out.append((peer, self.status()))
            else:
                raise ProtocolError(f"{kind.__name__} is not allowed from a client")
        return out

    def status(self) -> StatusReply:
        """What this scheduler knows: its node monitors, its jobs in flight, its counters."""
        now = self.clock()
        nodes = [
            NodeStatus(
                n.node_id, n.slots, tuple(sorted(n.labels)), n.queued, n.busy, max(now - n.heard, 0.0), n.draining
            )
            for n in sorted(self.nodes.values(), key=lambda n: n.worker)
        ]
        jobs = []
        for job_id, job in sorted(self.jobs.items()):
            unlaunched = len(self.table.unlaunched(job_id)) if job_id in self.table else 0
            n = len(job.done)
            jobs.append(JobStatus(job_id, job.user, job.priority, n, n - unlaunched, len(job.running), job.n_done))
        return StatusReply(self.scheduler_id, nodes, jobs, dict(self.stats))

    def on_client_lost(self, peer: Hashable) -> list:
        """The client behind `peer` is gone: drop its jobs and cancel their reservations."""
        out: list = []
        for job_id in self.clients.pop(peer, ()):
            job = self.jobs.pop(job_id)
            self._cancel_everywhere(job, out)
        return out

    def _submit(self, client: Hashable, msg: SubmitJob, out: list) -> None:
        reason = _invalid_job(msg)
        if reason is None:
            try:
                asked = self.probe_ratio if msg.probe_ratio is None else msg.probe_ratio
                probe_ratio = sparrow_core.check_probe_ratio(asked)
            except ValueError as exc:
                reason = str(exc)
        if reason is not None:
            self.stats["jobs_rejected"] += 1
            out.append((client, JobRejected(msg.ref, reason)))
            return
        job_id = self._next_job
        self._next_job += 1
        job = _Job(job_id, client, msg, probe_ratio)
        self.jobs[job_id] = job
        self.clients.setdefault(client, set()).add(job_id)
        self.stats["jobs"] += 1
        self.stats["tasks"] += len(msg.tasks)
        out.append((client, JobAccepted(msg.ref, job_id)))
        own = None
        if msg.task_constraints is not None and any(c is not None for c in msg.task_constraints):
            own = [None if c is None else self._eligible_workers(c) for c in msg.task_constraints]
            unplaceable = next((t for t, c in enumerate(own) if c is not None and len(c) == 0), None)
            if unplaceable is not None:
                self._abandon(job, f"no live node monitor satisfies the constraint of task {unplaceable}", out)
                return
            job.task_offsets = np.cumsum([0] + [0 if c is None else len(c) for c in own], dtype=np.int64)
            job.task_candidates = np.concatenate([c for c in own if c is not None])
        self.table.add_job(job_id, len(msg.tasks), own)
        self._probe(job, None, out)

    # -- probing and late binding -----------------------------------------------------------------

    def _probe(self, job: _Job, tasks: np.ndarray | None, out: list) -> None:
        """Send reservations for `tasks` (None = every task) of `job`: one message per node monitor."""
        job_id = job.job_id
        candidates = self._eligible_workers(job.constraint)
        if len(candidates) == 0:
            what = "" if job.constraint is None else " satisfies the job's constraint"
            self._abandon(job, "no live node monitor" + what, out)
            return
        try:
            workers, made_for = sparrow_core.sample_job(
                self.rng, self._next_worker, len(job.payloads), job.probe_ratio, candidates,
                job.task_candidates, job.task_offsets, tasks,
            )
        except sparrow_core.InfeasibleTaskError as exc:
            also = "" if job.constraint is None else " and the job's"
            self._abandon(job, f"no live node monitor satisfies the constraint of task {exc.task}{also}", out)
            return
        self.table.reserve(job_id, workers, made_for)
        where, counts = np.unique(workers, return_counts=True)
        self.stats["probes"] += len(workers)
        for worker, count in zip(where.tolist(), counts.tolist(), strict=True):
            node = self._by_worker[worker]
            node.jobs.add(job_id)
            job.probed.add(node.worker)
            out.append((node.peer, EnqueueReservations(job_id, job.user, job.priority, count)))

    def _get_task(self, node: _Node, job_id: int, out: list) -> None:
        self.stats["get_task"] += 1
        job = self.jobs.get(job_id)
        task = self.table.get_task(job_id, node.worker) if job is not None and job_id in self.table else None
        if task is None:
            self.stats["no_task"] += 1
            out.append((node.peer, NoTask(job_id)))
            if job is not None:
                self._reprobe_if_starved(job, out)
            return
        payload = job.payloads[task]
        job.payloads[task] = None  # sent once; the outcome is all that is left to wait for
        job.running[task] = node.worker
        self.stats["launched"] += 1
        out.append((node.peer, TaskLaunch(job_id, task, payload)))
        if self.table.all_launched(job_id):
            for worker in self.table.workers_to_cancel(job_id).tolist():
                holder = self._by_worker.get(worker)
                if holder is not None:
                    self.stats["cancel_messages"] += 1
                    out.append((holder.peer, CancelReservations(job_id)))
            self.table.remove_job(job_id)
        else:  # that was its last reservation (others were lost) but not its last task
            self._reprobe_if_starved(job, out)

    def _reprobe_if_starved(self, job: _Job, out: list) -> None:
        job_id = job.job_id
        if job_id in self.table and self.table.outstanding(job_id) == 0:
            unlaunched = self.table.unlaunched(job_id)
            if len(unlaunched):
                self.stats["reprobes"] += 1
                self._probe(job, unlaunched, out)

    def _task_finished(self, node: _Node, msg: TaskFinished, out: list) -> None:
        job = self.jobs.get(msg.job_id)
        if job is None or job.running.get(msg.task) != node.worker:
            self.stats["stale_outcomes"] += 1  # its job was dropped, or it was already reported lost
            return
        del job.running[msg.task]
        self._deliver(job, msg.task, msg.ok, msg.payload, msg.error, out)

    # -- outcomes ---------------------------------------------------------------------------------

    def _deliver(self, job: _Job, task: int, ok: bool, payload: bytes, error: str, out: list) -> None:
        if job.done[task]:
            return
        job.done[task] = 1
        job.n_done += 1
        self.stats["outcomes"] += 1
        last = job.n_done == len(job.done)
        out.append((job.client, TaskResult(job.ref, task, ok, payload, error, last)))
        if last:
            self._finish(job)

    def _finish(self, job: _Job) -> None:
        job_id = job.job_id
        del self.jobs[job_id]
        owned = self.clients.get(job.client)
        if owned is not None:
            owned.discard(job_id)
        if job_id in self.table:
            self.table.remove_job(job_id)
        for worker in job.probed:
            node = self._by_worker.get(worker)
            if node is not None:
                node.jobs.discard(job_id)

    def _abandon(self, job: _Job, reason: str, out: list) -> None:
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
            self._deliver(job, task, False, b"", reason, out)

    def _cancel_everywhere(self, job: _Job, out: list) -> None:
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


def _invalid_job(msg: SubmitJob) -> str | None:
    """Why `msg` is not a valid job, or None."""
    if not msg.tasks:
        return "a job needs at least one task"
    if msg.priority not in sparrow_core.PRIORITY_RANGE:
        return f"priority must fit in 32 bits (sparrow_core.PRIORITY_RANGE), got {msg.priority}"
    if msg.task_constraints is not None and len(msg.task_constraints) != len(msg.tasks):
        return f"task_constraints has {len(msg.task_constraints)} entries for {len(msg.tasks)} tasks"
    return None
