"""Which node monitors a scheduler believes idle, and how many of a job's tasks to bind to one at once (`bind_idle`),
sans-I/O. A part of SchedulerLogic (scheduler_logic.py), used by its placement (scheduler_placement.py).

Model: a probed node monitor that this scheduler believes idle gets some of the job's tasks with its
reservations (TaskToNode.bound) instead of a GetTask round trip each. The belief (`free_slots`): no task of ours
there whose outcome it has not reported, no live job of ours probed it, and its last heartbeat sent while it
held nothing of ours showed no other work (`heard`). Stale beliefs are safe: a bound task that finds its node
monitor busy waits there for a slot, ahead of its queue, so each task is still handed out once.

How many (`bound_share`): its free slots; while each of its recent busy spans took under SHORT_TASK per task
(`Node.short`: the node monitor's own pipelining gate, seen from here, over RECENT_SPANS spans), also half of
the rest, as a pipelined node monitor there would ask ahead at once (its half rule), BIND_AHEAD per slot at
most. A tiny job goes whole to one node (TINY_JOB_*). The spans are timed from outcomes (`span_outcome`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..wire.messages import Heartbeat
from .scheduler_nodes import SHORT_TASK, Node

DEFAULT_BIND_IDLE = True  # a job's first tasks go with its reservations to node monitors believed idle
BIND_AHEAD = 8  # tasks bound per slot beyond the first, at most, to a node monitor of short tasks
# a job of at most TINY_JOB_TASKS tasks per free slot that one idle node monitor would run in at most
# TINY_JOB_WORK seconds (by the time per task of its last TINY_SPANS busy spans) goes there whole (bound_share)
TINY_JOB_WORK = 0.0005
TINY_JOB_TASKS = 16
TINY_SPANS = 2


class IdleNodes:
    """A scheduler's beliefs about its node monitors' idleness and task times (module docstring). `jobs`: the
    scheduler's live jobs by id (a node's record of the jobs that probed it is pruned against it)."""

    def __init__(self, jobs: Mapping[int, object], clock: Callable[[], float]) -> None:
        self._jobs = jobs
        self._clock = clock

    def heard(self, node: Node, msg: Heartbeat) -> None:
        """`node` heartbeat: while it holds nothing of ours, what it shows is other schedulers' work."""
        if not self.holds_ours(node):
            node.others = msg.queued > 0 or msg.busy > 0

    def holds_ours(self, node: Node) -> bool:
        """Whether `node` runs or holds anything of this scheduler's: a task whose outcome it has not
        reported, or a live job's reservations (or tasks). Drops the finished jobs from node.jobs."""
        if node.running:
            return True
        jobs = node.jobs
        if jobs:
            live = self._jobs
            gone = [job_id for job_id in jobs if job_id not in live]
            jobs.difference_update(gone)
        return bool(jobs)

    def free_slots(self, node: Node) -> int:
        """The slots of `node` this scheduler believes free with nothing queued (0 unless it holds nothing
        of ours and its last heartbeat that could tell showed no other scheduler's work)."""
        if node.others or self.holds_ours(node):
            return 0
        return node.slots

    def span_outcome(self, node: Node) -> None:
        """An outcome from `node`: once its busy span ends (nothing of ours running there), its time per task
        joins the recent ones (`Node.short`: each of the last RECENT_SPANS under SHORT_TASK). That is the time
        from the span's first outcome to its last over the tasks after the first: the round trip before the
        first outcome is not the tasks' time (under load it alone is several ms). A span of one task is all
        round trip and task: it counts as short if even that was under SHORT_TASK, and says nothing otherwise."""
        node.span_tasks += 1
        if node.running:
            if node.span_tasks == 1:
                node.span_first = self._clock()
            return  # a busy node's outcomes (a map's) cost no clock read but its span's first
        now = self._clock()
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

    def bound_share(self, node: Node, count: int, unlaunched: int) -> int:
        """How many of a job's `count` reservations at `node` to consume at once with their tasks,
        `unlaunched` of its tasks being left to place: none unless it is believed idle; its free slots; and
        while each of its recent busy spans took under SHORT_TASK per task, also half of the rest, BIND_AHEAD
        per slot at most. So a small job of short tasks on an idle cluster starts with no GetTask round trip at
        all. A tiny job goes whole to the first such node that holds a reservation for each of its tasks: at
        most TINY_JOB_TASKS per free slot, which by the node's time per task in its last TINY_SPANS spans
        (`Node.lately`) would take at most TINY_JOB_WORK in all (no-op tasks: docs/runtime-services.md, "A tiny
        job on one node monitor"). Split, each node monitor and its worker would wake for a few microseconds of
        work; on a machine of few cores the processes woken cost more than the tasks. The last spans, not all 8
        of `short`: a map's spans show its node's throughput under the whole map's load (400 us per no-op task
        on 2 cores), which would keep every job split for 8 jobs after it."""
        free = self.free_slots(node)
        if not free or count <= free:
            return min(count, free)
        if not node.short:
            return free
        if unlaunched <= min(count, free * TINY_JOB_TASKS) and unlaunched * node.lately <= TINY_JOB_WORK:
            return unlaunched
        return min(count, free + (count - free) // 2, free * (BIND_AHEAD + 1))
