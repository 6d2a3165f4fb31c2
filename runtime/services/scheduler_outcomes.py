"""How a scheduler's tasks end, sans-I/O: every task of a job gets exactly one outcome (OutcomeToClient), whatever
happens to node monitors or clients. A part of SchedulerLogic (scheduler_logic.py).

- an outcome from the node monitor running the task is relayed to its client (`task_finished`); one from any
  other (its task was reported lost, its job dropped) is stale and counted, never relayed. A task running on
  a node monitor that is lost fails as a system failure (`fail_running_on`): the client decides whether to
  retry it, since a task may have side effects.
- what a task printed (OutputToScheduler, just before its outcome) from the node monitor running it is relayed to
  its client (OutputToClient) if it fits the client's link, and its end kept for the task history
  (`task_output`); from any other node monitor it is dropped.
- an outcome over its client's link fails alone (TOO_LARGE), naming its size and the limit; the link stays.
- each delivered outcome is recorded in the task history (task_history.py) as a TaskEntry, timed with the
  scheduler's clock; a job leaves with its last outcome (`finish`), and its leftover reservations with it.
- a client's CancelJob (`cancel`) ends the tasks it names as cancelled at once: those not launched never
  are, running ones are stopped (StopTask) with `force`, otherwise their result is dropped as it comes.
- a job that no live node monitor can take waits up to `placement_timeout` (`unplaceable`; a node monitor
  registering retries it) and then fails its unlaunched tasks as UNPLACEABLE (`expire_waiting`); with a
  timeout of 0 it fails at once (`abandon`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from ..wire.limits import MESSAGE_OVERHEAD, clip, too_large
from ..wire.messages import (
    CANCELLED,
    SYSTEM,
    TOO_LARGE,
    UNPLACEABLE,
    CancelJob,
    CancelReservations,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    OutputToClient,
    OutputToScheduler,
    StopTask,
    failed,
)
from .outbox import Outbox
from .scheduler_jobs import Job, SchedulerState
from .scheduler_nodes import Node
from .task_history import TaskEntry, error_summary


class Outcomes:
    """How the tasks of one scheduler end (module docstring). `by_worker`: the registered node monitors by
    worker id (scheduler_nodes.Membership); `on_node_outcome`: told of each outcome from a node monitor that
    had a task of ours running (bind_idle's view of its tasks; None: no one)."""

    def __init__(
        self,
        host: SchedulerState,
        by_worker: Mapping[int, Node],
        placement_timeout: float,
        on_node_outcome: Callable[[Node], None] | None,
    ) -> None:
        self._jobs = host.jobs
        self._clients = host.clients
        self._refs = host.refs
        self._unfinished = host.unfinished
        self._waiting = host.waiting
        self._table = host.table
        self._stats = host.stats
        self._record = host.history.add
        self._record_output = host.history.add_output
        self._frame_limits = host.frame_limits
        self._max_frame = host.max_frame
        self._clock = host.clock
        self._by_worker = by_worker
        self.placement_timeout = placement_timeout
        self._on_node_outcome = on_node_outcome
        self.now = self._clock()  # the time of the batch being handled (SchedulerLogic._batch_start)

    def task_finished(self, node: Node, msg: OutcomeToScheduler, out: Outbox) -> None:
        """`node` reports the outcome of a task it ran."""
        if node.running:  # a stale outcome, too, is of a task that ran there and ended
            node.running -= 1
            if self._on_node_outcome is not None:
                self._on_node_outcome(node)
        job = self._jobs.get(msg.job_id)
        task = msg.task
        if job is None or job.running.get(task) != node.worker:
            self._stats["stale_outcomes"] += 1  # its job was dropped, or it was already reported lost
            return
        del job.running[task]
        outcome = msg.outcome
        self._stats["bytes_from_node_monitors"] += len(outcome.payload) + len(outcome.error)
        self.deliver(job, task, outcome, out, node.node_id)

    def task_output(self, node: Node, msg: OutputToScheduler, out: Outbox) -> None:
        """`node` sends what a task it runs printed (its outcome follows)."""
        job = self._jobs.get(msg.job_id)
        if job is None or job.running.get(msg.task) != node.worker:
            return  # stale: its job was dropped or the task reported lost; never another's to send
        output = msg.output
        self._record_output(job.job_id, msg.task, output)
        size = len(output.stdout) + len(output.stderr) + len(output.node)
        if size + MESSAGE_OVERHEAD <= self._frame_limits.get(job.client, self._max_frame):
            out.append((job.client, OutputToClient(job.ref, msg.task, output)))

    def fail_running_on(self, node: Node, out: Outbox) -> None:
        """`node` was lost: the tasks of ours running there fail as SYSTEM."""
        reason = f"node monitor {clip(node.node_id)!r} was lost while running the task"
        for job_id in list(node.jobs):
            job = self._jobs.get(job_id)
            if job is not None:
                for task in [t for t, w in job.running.items() if w == node.worker]:
                    del job.running[task]
                    self.deliver(job, task, failed(reason, SYSTEM), out, node.node_id)

    def deliver(self, job: Job, task: int, outcome: Outcome, out: Outbox, node_id: str = "") -> None:
        """Send task `task`'s outcome to its client and record it (`node_id`: where it ran, "" if nowhere)."""
        done = job.done
        if done[task]:
            return
        done[task] = 1
        job.payloads[task] = None
        n_done = job.n_done = job.n_done + 1
        client = job.client
        self._unfinished[client] -= 1
        stats = self._stats
        stats["outcomes"] += 1
        size = len(outcome.payload) + len(outcome.error)
        limit = self._frame_limits.get(client, self._max_frame)
        if size + MESSAGE_OVERHEAD > limit:  # the text only when it is needed (a hot path)
            problem = too_large("the task's outcome", size, limit, "of the link to its client")
            assert problem is not None  # over the limit: too_large names it
            stats["too_large"] += 1  # it fails alone, once; the link stays
            outcome = failed(problem, TOO_LARGE)
            size = len(outcome.error)
        stats["bytes_to_clients"] += size
        last = n_done == len(done)
        out.append((client, OutcomeToClient(job.ref, task, outcome, last)))
        now = self.now
        ok = outcome.ok
        self._record(
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
            self.finish(job)

    def finish_in_table_if_done(self, job: Job) -> None:
        """Drop the job's table entry once no task of it is left to launch (the rest were cancelled)."""
        job_id = job.job_id
        table = self._table
        if job_id in table and all(job.done[t] for t in table.unlaunched(job_id).tolist()):
            table.remove_job(job_id)

    def finish(self, job: Job) -> None:
        """Every task of `job` has its outcome: forget it."""
        job_id = job.job_id
        del self._jobs[job_id]
        self._waiting.pop(job_id, None)
        self._refs.pop((job.client, job.ref), None)
        owned = self._clients.get(job.client)
        if owned is not None:
            owned.discard(job_id)
        if job_id in self._table:
            self._table.remove_job(job_id)
        for worker in job.probed:
            node = self._by_worker.get(worker)
            if node is not None:
                node.jobs.discard(job_id)

    def cancel(self, client: Hashable, msg: CancelJob, out: Outbox) -> None:
        """The client cancels tasks of its job `msg.ref`: each gets a CANCELLED outcome now; those not
        launched never are, running ones are stopped with `force` (else their result is dropped)."""
        job = self._jobs.get(self._refs.get((client, msg.ref), -1))
        if job is None:
            return  # finished or rejected meanwhile: a normal race
        self._stats["cancels"] += 1
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
            self.deliver(job, task, failed("cancelled by its client", CANCELLED), out)
        if job.job_id in self._jobs and msg.tasks is None and not msg.pending_only:
            self._waiting.pop(job.job_id, None)
            self.cancel_everywhere(job, out)

    def cancel_everywhere(self, job: Job, out: Outbox) -> None:
        """Cancel the job's reservations at every live node monitor it probed and forget it in the table."""
        job_id = job.job_id
        if job_id not in self._table:
            return
        self._table.remove_job(job_id)
        for worker in job.probed:
            node = self._by_worker.get(worker)
            if node is not None:
                self._stats["cancel_messages"] += 1
                out.append((node.peer, CancelReservations(job_id)))

    def abandon(self, job: Job, reason: str, out: Outbox) -> None:
        """Fail every task of `job` not launched yet with `reason`; running tasks still report."""
        self._stats["abandoned"] += 1
        job_id = job.job_id
        if job_id in self._table:
            unlaunched = self._table.unlaunched(job_id).tolist()
            self.cancel_everywhere(job, out)
        else:
            unlaunched = [t for t in range(len(job.done)) if not job.done[t] and t not in job.running]
        for task in unlaunched:
            job.payloads[task] = None
            self.deliver(job, task, failed(reason, UNPLACEABLE), out)

    def unplaceable(self, job: Job, reason: str, out: Outbox) -> None:
        """No live node monitor can take the job's unlaunched tasks now: wait for one up to
        `placement_timeout` (a node monitor registering retries it; `expire_waiting` gives up), or
        abandon it at once if that is 0."""
        if not self.placement_timeout:
            self.abandon(job, reason, out)
        elif job.job_id not in self._waiting:
            self._stats["waiting_for_placement"] += 1
            self._waiting[job.job_id] = (self._clock() + self.placement_timeout, reason)

    def expire_waiting(self, out: Outbox) -> None:
        """Fail the jobs that waited `placement_timeout` for a node monitor (their unlaunched tasks)."""
        waiting = self._waiting
        now = self._clock()
        for job_id, (deadline, reason) in list(waiting.items()):
            if now >= deadline and job_id in waiting:
                del waiting[job_id]
                job = self._jobs.get(job_id)
                if job is not None:
                    self.abandon(job, f"{reason} (waited {self.placement_timeout:g} s)", out)
