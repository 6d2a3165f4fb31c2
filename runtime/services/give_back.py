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

from typing import Any

from ..errors import ProtocolError
from ..wire.messages import GiveBack


def take_back(logic: Any, node: Any, msg: GiveBack, out: list) -> None:
    """`logic` (a SchedulerLogic: typed loosely, so that the two modules do not import each other) heard from `node`
    (its _Node) that it gave back task `msg.task` of job `msg.job_id` unstarted: launch it again elsewhere (module
    docstring)."""
    job = logic.jobs.get(msg.job_id)
    if job is None:
        if msg.job_id >= logic._next_job:
            raise ProtocolError(f"GiveBack for job {msg.job_id}, which this scheduler never had")
        logic.stats["stale_give_backs"] += 1  # it ended meanwhile (cancelled, failed, done)
        return
    task = msg.task
    if task >= len(job.done):
        raise ProtocolError(f"GiveBack for task {task} of job {msg.job_id}, which has {len(job.done)} tasks")
    if job.done[task]:
        logic.stats["stale_give_backs"] += 1  # its outcome was delivered meanwhile (a cancel)
        return
    if job.running.get(task) != node.worker:
        raise ProtocolError(f"GiveBack for task {task} of job {msg.job_id}, which is not launched to this node monitor")
    del job.running[task]
    if node.running:
        node.running -= 1
    logic.stats["given_back"] += 1
    table = logic.table
    if msg.job_id not in table:  # every task had launched: back in, with only this one to launch
        _add_back(logic, job)
    table.unlaunch(msg.job_id, task)
    logic._reprobe_if_starved(job, out)


def _add_back(logic: Any, job: Any) -> None:
    """Put `job` back into the task table as it was submitted (constraints, preferences, sampling), every task
    launched."""
    n = len(job.done)
    own = None
    if job.task_offsets is not None and job.task_candidates is not None:
        offsets, candidates = job.task_offsets.tolist(), job.task_candidates
        own = [None if offsets[t] == offsets[t + 1] else candidates[offsets[t] : offsets[t + 1]] for t in range(n)]
    if job.prefer is not None and job.prefer_offsets is not None:
        offsets, prefer = job.prefer_offsets.tolist(), job.prefer.tolist()
        ordered = [prefer[offsets[t] : offsets[t + 1]] for t in range(n)]
        logic.table.add_job(job.job_id, n, own, ordered, job.per_task)
    else:
        logic.table.add_job(job.job_id, n, own, None, job.per_task)
    logic.table.launch_all(job.job_id)
