"""Reference model of csrc/sparrow/task_table.h (late binding): a worker asking get_task
consumes one of its outstanding reservations of the job and gets, in order of preference,
the lowest-numbered unlaunched task one of its reservations was made for that lists it (as a
candidate or a preferred worker), the lowest-numbered unlaunched task listing it, the
lowest-numbered unlaunched soft task one of its reservations was made for, the lowest-numbered
unlaunched unconstrained task, the lowest-numbered unlaunched soft task with preferred workers;
or None. A soft task has preferred workers and no candidates, or (per_task) neither: bound to its
own probes; a probe made for it may be anywhere. Decisions depend on values only, never on the
order reservations were recorded in."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

OUTSTANDING, CONSUMED, CANCELLED = 0, 1, 2


@dataclass
class _Probe:
    worker: int
    task: int  # -1: made for any unconstrained task
    state: int = OUTSTANDING


@dataclass
class _Job:
    n_tasks: int
    candidates: list[set[int]]  # per task, its candidates or (soft) preferred workers; empty = unconstrained
    launched: list[bool]
    soft: list[bool]  # a probe made for it may be anywhere
    anywhere: list[bool]  # any reservation may run it (soft with preferred workers)
    probes: dict[int, list[_Probe]] = field(default_factory=dict)  # worker -> its probes

    def outstanding(self) -> list[_Probe]:
        return [p for probes in self.probes.values() for p in probes if p.state == OUTSTANDING]


class TaskTable:
    def __init__(self) -> None:
        self._jobs: dict[int, _Job] = {}

    def _find(self, job_id: int) -> _Job:
        if job_id not in self._jobs:
            raise ValueError(f"job_id {job_id} does not exist")
        return self._jobs[job_id]

    def add_job(self, job_id: int, n_tasks: int, candidates=None, preferred=None, per_task=False) -> None:
        if n_tasks < 0:
            raise ValueError(f"n_tasks must be >= 0, got {n_tasks}")
        if job_id in self._jobs:
            raise ValueError(f"job_id {job_id} already exists")
        own = [[] if c is None else [int(w) for w in c] for c in (candidates or [None] * n_tasks)]
        if len(own) != n_tasks:
            raise ValueError(f"candidates must have one entry per task ({n_tasks}), got {len(own)}")
        for t, workers in enumerate(own):
            if len(set(workers)) != len(workers):
                raise ValueError(f"candidates: task {t} lists a worker twice")
            if any(w < 0 for w in workers):
                raise ValueError(f"candidates: task {t} has a negative worker id")
        prefers = [[] if p is None else [int(w) for w in p] for p in (preferred or [None] * n_tasks)]
        if len(prefers) != n_tasks:
            raise ValueError(f"preferred must have one entry per task ({n_tasks}), got {len(prefers)}")
        anywhere = [bool(p) and not c for c, p in zip(own, prefers, strict=True)]
        soft = [a or (per_task and not c) for a, c in zip(anywhere, own, strict=True)]
        for t in range(n_tasks):
            if anywhere[t]:
                if any(w < 0 for w in prefers[t]):
                    raise ValueError(f"preferred: task {t} has a negative worker id")
                if len(set(prefers[t])) != len(prefers[t]):
                    raise ValueError(f"preferred: task {t} lists a worker twice")
                own[t] = prefers[t]
        self._jobs[job_id] = _Job(n_tasks, [set(w) for w in own], [False] * n_tasks, soft, anywhere)

    def reserve(self, job_id: int, workers, tasks=None) -> None:
        job = self._find(job_id)
        workers = [int(w) for w in workers]
        tasks = [-1] * len(workers) if tasks is None else [int(t) for t in tasks]
        for w, t in zip(workers, tasks, strict=True):
            if w < 0 or not -1 <= t < job.n_tasks:
                raise ValueError(f"workers/tasks: bad probe ({w}, {t})")
            if t >= 0 and not job.soft[t] and w not in job.candidates[t]:
                raise ValueError(f"workers: worker {w} is not a candidate of task {t}")
        for w, t in zip(workers, tasks):
            job.probes.setdefault(w, []).append(_Probe(w, t))

    def get_task(self, job_id: int, worker: int) -> int | None:
        job = self._find(job_id)
        probes = job.probes.get(worker, [])
        held = [p for p in probes if p.state == OUTSTANDING]
        if not held:
            return None
        min(held, key=lambda p: p.task).state = CONSUMED
        made_for = [p.task for p in probes if p.task >= 0 and not job.launched[p.task]]
        task = min((t for t in made_for if worker in job.candidates[t]), default=None)
        if task is None:
            task = next((t for t in range(job.n_tasks) if not job.launched[t] and worker in job.candidates[t]), None)
        if task is None:
            task = min(made_for, default=None)  # a soft task's probe elsewhere than it prefers
        if task is None:
            task = next(
                (t for t in range(job.n_tasks) if not job.launched[t] and not job.soft[t] and not job.candidates[t]),
                None,
            )
        if task is None:
            task = next((t for t in range(job.n_tasks) if not job.launched[t] and job.anywhere[t]), None)
        if task is not None:
            job.launched[task] = True
        return task

    def get_task_many(self, job_ids, workers) -> np.ndarray:
        answers = [self.get_task(int(j), int(w)) for j, w in zip(job_ids, workers, strict=True)]
        return np.asarray([-1 if a is None else a for a in answers], dtype=np.int64)

    def all_launched(self, job_id: int) -> bool:
        return all(self._find(job_id).launched)

    def workers_to_cancel(self, job_id: int) -> np.ndarray:
        job = self._find(job_id)
        if not all(job.launched):
            return np.empty(0, dtype=np.int64)
        held = job.outstanding()
        for p in held:
            p.state = CANCELLED
        return np.asarray(sorted({p.worker for p in held}), dtype=np.int64)

    def drop_worker(self, job_id: int, worker: int) -> int:
        held = [p for p in self._find(job_id).probes.get(worker, []) if p.state == OUTSTANDING]
        for p in held:
            p.state = CANCELLED
        return len(held)

    def unlaunched(self, job_id: int) -> np.ndarray:
        job = self._find(job_id)
        return np.asarray([t for t in range(job.n_tasks) if not job.launched[t]], dtype=np.int64)

    def unlaunch(self, job_id: int, task: int) -> None:
        job = self._find(job_id)
        if not 0 <= task < job.n_tasks:
            raise ValueError(f"task {task} is out of range")
        if not job.launched[task]:
            raise ValueError(f"task {task} is not launched")
        job.launched[task] = False

    def launch_all(self, job_id: int) -> None:
        job = self._find(job_id)
        job.launched = [True] * job.n_tasks

    def remove_job(self, job_id: int) -> None:
        self._find(job_id)
        del self._jobs[job_id]

    def n_tasks(self, job_id: int) -> int:
        return self._find(job_id).n_tasks

    def n_launched(self, job_id: int) -> int:
        return sum(self._find(job_id).launched)

    def outstanding(self, job_id: int) -> int:
        return len(self._find(job_id).outstanding())

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)
