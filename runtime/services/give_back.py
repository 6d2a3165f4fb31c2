"""The scheduler's side of give-back, sans-I/O: a node monitor hands back a task it was given and never started.

A node monitor that pipelines (node_monitor_logic.py) may hold a task bound ahead behind a running task that
overruns; it then sends GiveBack for it (and forgets it: it never runs there). `take_back` un-launches it: the
task leaves the job's running tasks and the sender's count, and the task table binds it again (TaskTable.unlaunch;
a job that had left the table, every task launched, is added back with every other task launched), so the job's
next GetTask from any node monitor gets it; a job left with no outstanding reservation is probed again for it.
Its payload is still at hand: the scheduler keeps a task's payload until its outcome is delivered.

Exactly one outcome per task: a GiveBack for a task already ended (cancelled, failed, delivered) or of a job that
ended is stale and dropped (the races of a cancel with a give-back); one for a task of a job that never existed,
out of range, not launched, or launched to another node monitor (a lying or confused peer, a duplicate) is a
protocol error, which closes that link and changes nothing. After a GiveBack that node monitor's outcome for the
task, if it lied and sent one anyway, is stale (`job.running` no longer names it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np

import sparrow_core

from ..errors import ProtocolError
from ..wire.messages import GiveBack
from .outbox import Outbox


class GivenBackJob(Protocol):
    """What give-back reads and changes of a job of the scheduler."""

    @property
    def job_id(self) -> int: ...
    @property
    def done(self) -> bytearray:
        """Per task: its outcome was delivered."""
        ...

    @property
    def running(self) -> MutableMapping[int, int]:
        """Task -> the worker it was launched to."""
        ...

    @property
    def per_task(self) -> bool: ...
    @property
    def task_offsets(self) -> np.ndarray | None: ...
    @property
    def task_candidates(self) -> np.ndarray | None: ...
    @property
    def prefer(self) -> np.ndarray | None: ...
    @property
    def prefer_offsets(self) -> np.ndarray | None: ...


class GivingNode(Protocol):
    """What give-back reads and changes of the node monitor that gave a task back."""

    worker: int
    running: int  # tasks launched to it whose outcome it has not reported


Job = TypeVar("Job", bound=GivenBackJob)


class GiveBackHost(Protocol[Job]):
    """What give-back needs of the scheduler's placement (scheduler_placement.Placement)."""

    @property
    def jobs(self) -> Mapping[int, Job]: ...
    @property
    def table(self) -> sparrow_core.TaskTable: ...
    @property
    def stats(self) -> Counter[str]: ...
    def issued(self, job_id: int) -> bool:
        """Whether this scheduler ever had job `job_id`."""
        ...

    def reprobe_if_starved(self, job: Job, out: Outbox) -> None:
        """Probe again for `job`'s unlaunched tasks if no reservation of it is outstanding."""
        ...


class GiveBacks(Generic[Job]):
    """The scheduler's side of give-back (module docstring), over its host's jobs and task table."""

    def __init__(self, host: GiveBackHost[Job]) -> None:
        self._host = host

    def take_back(self, node: GivingNode, msg: GiveBack, out: Outbox) -> None:
        """`node` gave back task `msg.task` of job `msg.job_id` unstarted: launch it again elsewhere (module
        docstring). ProtocolError for a GiveBack no honest node monitor sends."""
        host = self._host
        job = host.jobs.get(msg.job_id)
        if job is None:
            if not host.issued(msg.job_id):
                raise ProtocolError(f"GiveBack for job {msg.job_id}, which this scheduler never had")
            host.stats["stale_give_backs"] += 1  # it ended meanwhile (cancelled, failed, done)
            return
        task = msg.task
        if task >= len(job.done):
            raise ProtocolError(f"GiveBack for task {task} of job {msg.job_id}, which has {len(job.done)} tasks")
        if job.done[task]:
            host.stats["stale_give_backs"] += 1  # its outcome was delivered meanwhile (a cancel)
            return
        if job.running.get(task) != node.worker:
            raise ProtocolError(
                f"GiveBack for task {task} of job {msg.job_id}, which is not launched to this node monitor"
            )
        del job.running[task]
        if node.running:
            node.running -= 1
        host.stats["given_back"] += 1
        if msg.job_id not in host.table:  # every task had launched: back in, with only this one to launch
            self._add_back(job)
        host.table.unlaunch(msg.job_id, task)
        host.reprobe_if_starved(job, out)

    def _add_back(self, job: Job) -> None:
        """Put `job` back into the task table as it was submitted (constraints, preferences, sampling), every
        task launched."""
        table = self._host.table
        n = len(job.done)
        own: Sequence[Iterable[int] | None] | None = None
        if job.task_offsets is not None and job.task_candidates is not None:
            offsets, candidates = job.task_offsets.tolist(), job.task_candidates
            own = [None if offsets[t] == offsets[t + 1] else candidates[offsets[t] : offsets[t + 1]] for t in range(n)]
        ordered = None
        if job.prefer is not None and job.prefer_offsets is not None:
            offsets, prefer = job.prefer_offsets.tolist(), job.prefer.tolist()
            ordered = [prefer[offsets[t] : offsets[t + 1]] for t in range(n)]
        table.add_job(job.job_id, n, own, ordered, job.per_task)
        table.launch_all(job.job_id)
