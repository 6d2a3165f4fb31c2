"""The node monitor's decisions, sans-I/O: messages in, `(peer, message)` pairs out. No sockets, no trio.

The reservation queue and its policy (fifo, priority, weighted fair) are the kernel's
`sparrow_core.ReservationQueue`; this class adds slot accounting and the mapping between the queue's
integer keys and `(scheduler, job id)` (job ids are only unique per scheduler).

A free slot pops a reservation and asks its scheduler for a task (GetTask); the slot stays held until
the answer. NoTask frees the slot, gives a fair-share user its turn back (`refund`) and pops the next
reservation at once. TaskToNode is passed on as an output addressed to the executor: the shell runs
it and calls `on_task_done` with its Outcome, which reports OutcomeToScheduler and frees the slot.
StopTask (a forced cancel) is passed on the same way: the shell stops that task if its executor can.

`drain()` (for a clean shutdown) drops the queued reservations and takes no more (later ones are
dropped on arrival), and tells every scheduler (a Heartbeat with `draining`), which then stops
probing this node monitor and re-probes the jobs whose reservations were here. The tasks already
launched or asked for run to the end and report; once `busy` is 0 the shell can close its links.

Error handling: a message a scheduler may not send, or reservations past MAX_QUEUED_RESERVATIONS,
are answered with Error, which closes that link; the messages of its batch before it keep their
effects and outputs (a TaskToNode before a bad NoTask still runs its task and frees its slot after).
Answers about a scheduler that is gone are dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import sparrow_core

from ..errors import ProtocolError
from ..wire.limits import MAX_QUEUED_RESERVATIONS, MAX_REASON, clip
from ..wire.messages import (
    CancelReservations,
    EnqueueReservations,
    Error,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToScheduler,
    Registered,
    StopTask,
    TaskToNode,
)


class _Reserved:
    """What the node monitor knows of one (scheduler, job): its queue key, user and live counts."""

    __slots__ = ("asking", "job_id", "key", "queued", "scheduler", "user")

    def __init__(self, key: int, scheduler: Hashable, job_id: int, user: str) -> None:
        self.key = key
        self.scheduler = scheduler
        self.job_id = job_id
        self.user = user
        self.queued = 0  # reservations in the queue
        self.asking = 0  # GetTask requests awaiting an answer


class NodeMonitorLogic:
    """Slots, the reservation queue, and the GetTask / launch / finish cycle of one node monitor."""

    def __init__(
        self,
        *,
        slots: int,
        policy: str = "fifo",
        weights: dict[str, float] | None = None,
    ) -> None:
        if not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be an int >= 1, got {slots!r}")
        if policy not in sparrow_core.QUEUE_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(sparrow_core.QUEUE_POLICIES)}, got {policy!r}")
        self.slots = slots
        self.free = slots
        self.draining = False
        self.queue = sparrow_core.ReservationQueue(policy, weights=weights)
        self.stats: Counter[str] = Counter()
        self._schedulers: dict[Hashable, dict[int, _Reserved]] = {}  # scheduler -> job id -> entry
        self._by_key: dict[int, _Reserved] = {}
        self._next_key = 0

    # -- schedulers -------------------------------------------------------------------------------

    def on_scheduler_registered(self, scheduler: Hashable) -> None:
        self._schedulers.setdefault(scheduler, {})

    def on_scheduler_lost(self, scheduler: Hashable) -> list:
        """Drop the reservations of a scheduler that is gone; slots waiting on its answers are freed."""
        out: list = []
        for entry in self._schedulers.pop(scheduler, {}).values():
            self.queue.cancel(entry.key)
            self.free += entry.asking
            del self._by_key[entry.key]
        self._fill(out)
        return out

    def on_scheduler_messages(self, scheduler: Hashable, msgs: list) -> list:
        out: list = []
        jobs = self._schedulers.get(scheduler)
        if jobs is None:
            return [(scheduler, Error("message from a scheduler this node monitor is not registered with"))]
        for msg in msgs:
            kind = type(msg)
            try:
                if kind is EnqueueReservations:
                    self._enqueue(scheduler, jobs, msg)
                elif kind is TaskToNode:
                    self._answered(jobs, msg.job_id)
                    self.stats["launched"] += 1
                    out.append((scheduler, msg))  # for the executor
                elif kind is NoTask:
                    entry = self._answered(jobs, msg.job_id)
                    self.stats["no_task"] += 1
                    self.free += 1
                    self.queue.refund(entry.user)
                elif kind is CancelReservations:
                    held = jobs.get(msg.job_id)
                    if held is not None:
                        self.stats["cancelled"] += self._drop_queued(jobs, held)
                elif kind is StopTask:
                    self.stats["stop_requests"] += 1
                    out.append((scheduler, msg))  # for the executor
                elif kind is not Heartbeat and kind is not Registered:
                    raise ProtocolError(f"{kind.__name__} is not allowed from a scheduler")
            except ProtocolError as exc:
                self.stats["protocol_errors"] += 1
                out.append((scheduler, Error(clip(str(exc), MAX_REASON))))
                break
        self._fill(out)
        return out

    def on_task_done(self, scheduler: Hashable, job_id: int, task: int, outcome: Outcome) -> list:
        """The executor finished a launched task: report it, free the slot, start the next reservation."""
        out: list = []
        self.free += 1
        self.stats["finished"] += 1
        if scheduler in self._schedulers:
            out.append((scheduler, OutcomeToScheduler(job_id, task, outcome)))
        self._fill(out)
        return out

    @property
    def busy(self) -> int:
        """Slots running a task or waiting for a GetTask answer."""
        return self.slots - self.free

    def drain(self) -> list:
        """Drop the queued reservations, take no more, and tell the schedulers (module docstring)."""
        self.draining = True
        for jobs in self._schedulers.values():
            for entry in list(jobs.values()):
                self._drop_queued(jobs, entry)
        return [(scheduler, self.heartbeat()) for scheduler in self._schedulers]

    def heartbeat(self) -> Heartbeat:
        """The Heartbeat to send a scheduler now."""
        return Heartbeat(len(self.queue), self.busy, self.draining)

    # -- internals --------------------------------------------------------------------------------

    def _enqueue(self, scheduler: Hashable, jobs: dict[int, _Reserved], msg: EnqueueReservations) -> None:
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
            entry = _Reserved(self._next_key, scheduler, msg.job_id, msg.user)
            self._next_key += 1
            jobs[msg.job_id] = entry
            self._by_key[entry.key] = entry
        elif entry.user != msg.user:
            raise ProtocolError(f"job {msg.job_id} was reserved for user {clip(entry.user)!r}, now {clip(msg.user)!r}")
        self.queue.push(entry.key, entry.user, msg.priority, count=msg.count)
        entry.queued += msg.count
        self.stats["reservations"] += msg.count

    def _drop_queued(self, jobs: dict[int, _Reserved], entry: _Reserved) -> int:
        """Remove the job's queued reservations; returns how many there were."""
        removed = self.queue.cancel(entry.key)
        entry.queued -= removed
        self._forget_if_idle(jobs, entry)
        return removed

    def _answered(self, jobs: dict[int, _Reserved], job_id: int) -> _Reserved:
        entry = jobs.get(job_id)
        if entry is None or entry.asking == 0:
            raise ProtocolError(f"answer for job {job_id}, which this node monitor did not ask about")
        entry.asking -= 1
        self._forget_if_idle(jobs, entry)
        return entry

    def _forget_if_idle(self, jobs: dict[int, _Reserved], entry: _Reserved) -> None:
        if entry.queued == 0 and entry.asking == 0:
            del jobs[entry.job_id]
            del self._by_key[entry.key]

    def _fill(self, out: list) -> None:
        """While a slot is free and a reservation waits: pop it and ask its scheduler for a task."""
        queue = self.queue
        while self.free > 0 and queue and not self.draining:
            reservation = queue.pop()
            assert reservation is not None  # the queue is not empty
            entry = self._by_key[reservation.job_id]
            entry.queued -= 1
            entry.asking += 1
            self.free -= 1
            self.stats["get_task"] += 1
            out.append((entry.scheduler, GetTask(entry.job_id)))
