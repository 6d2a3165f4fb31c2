"""A job as its scheduler keeps it, from submission to its last outcome: its tasks' payloads until their outcomes,
which tasks run where, which outcomes were delivered (each task gets exactly one), and what placement needs
again to re-probe it (constraints, preferences, sampling, resources). The parts of SchedulerLogic share it, and
the logic's other state (SchedulerState: its jobs, clients, task table, counters, clock).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from typing import Protocol

import numpy as np

import sparrow_core

from ..wire.messages import Constraint, SubmitJob
from .scheduler_nodes import STOPS_TASKS
from .task_history import TaskHistory


class Job:
    """One job at its scheduler: its tasks' payloads and state, from submission to its last outcome."""

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


class SchedulerState(Protocol):
    """What the parts of the scheduler's logic (outcomes, placement) share of it (SchedulerLogic): its jobs,
    clients and task table, and the links' frame limits. Read once, when a part is made: each is one object
    for the logic's life."""

    @property
    def jobs(self) -> dict[int, Job]: ...
    @property
    def clients(self) -> dict[Hashable, set[int]]:
        """Client -> the ids of its jobs in flight."""
        ...

    @property
    def refs(self) -> dict[tuple[Hashable, int], int]:
        """(client, its ref of a job) -> the job's id."""
        ...

    @property
    def unfinished(self) -> Counter[Hashable]:
        """Client -> its tasks without an outcome yet."""
        ...

    @property
    def waiting(self) -> dict[int, tuple[float, str]]:
        """Job id -> (deadline, why it cannot be placed) of the jobs waiting for a node monitor."""
        ...

    @property
    def table(self) -> sparrow_core.TaskTable: ...
    @property
    def stats(self) -> Counter[str]: ...
    @property
    def history(self) -> TaskHistory: ...
    @property
    def frame_limits(self) -> Mapping[Hashable, int]: ...
    @property
    def max_frame(self) -> int: ...
    @property
    def clock(self) -> Callable[[], float]: ...
