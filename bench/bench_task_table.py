"""The late-binding task table: the kernel (sparrow_core.TaskTable) beside a pure-Python
table of dicts and lists doing the same work. One run is the scheduler side of many jobs:
add each job, record its reservations, answer every reservation's get_task (jobs
interleaved; 3/4 of them ask), collect the workers to cancel, remove the job. Figures: jobs and get_task
requests per second, and the ratio to the baseline.

Import-safe: with a sparrow_core lacking TaskTable or get_task_many, those benchmarks are
skipped (setup raises NotImplementedError), never an import error.
"""

from __future__ import annotations

from typing import ClassVar

from bench.common import late_binding_jobs
from bench.measure import Case, KernelBenchmark

try:
    import sparrow_core
except ImportError:  # the suite must import with any version of the package
    sparrow_core = None


class PythonTaskTable:
    """Unconstrained late binding with dicts of lists: per job the next task to hand out and
    each worker's outstanding reservations."""

    def __init__(self) -> None:
        self.jobs: dict = {}  # job -> [n_tasks, n_launched, {worker: [outstanding reservations]}]

    def add_job(self, job: int, n_tasks: int) -> None:
        if job in self.jobs:
            raise ValueError(f"job_id {job} already exists")
        self.jobs[job] = [n_tasks, 0, {}]

    def reserve(self, job: int, workers) -> None:
        held = self.jobs[job][2]
        for w in workers:
            held.setdefault(w, []).append(-1)

    def get_task(self, job: int, worker: int):
        state = self.jobs[job]
        held = state[2].get(worker)
        if not held:
            return None
        held.pop()
        if state[1] == state[0]:
            return None
        state[1] += 1
        return state[1] - 1

    def workers_to_cancel(self, job: int) -> list:
        state = self.jobs[job]
        if state[1] < state[0]:
            return []
        workers = sorted(w for w, held in state[2].items() if held)
        state[2] = {}
        return workers

    def remove_job(self, job: int) -> None:
        del self.jobs[job]


def late_binding_case(n_jobs: int, n_tasks: int, n_workers: int = 10_000, probe_ratio: float = 2.0) -> Case:
    """The full scheduler-side cycle of n_jobs jobs (see the module comment)."""
    if sparrow_core is None or not hasattr(sparrow_core, "TaskTable"):
        raise NotImplementedError("sparrow_core has no TaskTable")
    if not hasattr(sparrow_core.TaskTable, "get_task_many"):
        raise NotImplementedError("sparrow_core.TaskTable has no get_task_many")
    probes, offsets, request_jobs, request_workers = late_binding_jobs(n_jobs, n_tasks, n_workers, probe_ratio)
    per_job = [probes[offsets[j] : offsets[j + 1]] for j in range(n_jobs)]
    per_job_lists = [p.tolist() for p in per_job]
    requests = list(zip(request_jobs.tolist(), request_workers.tolist()))

    def batch():
        table = sparrow_core.TaskTable()
        for job, workers in enumerate(per_job):
            table.add_job(job, n_tasks)
            table.reserve(job, workers)
        answers = table.get_task_many(request_jobs, request_workers)
        cancelled = sum(len(table.workers_to_cancel(job)) for job in range(n_jobs))
        for job in range(n_jobs):
            table.remove_job(job)
        return int((answers >= 0).sum()), cancelled

    def cycle(table, jobs):
        for job, workers in enumerate(jobs):
            table.add_job(job, n_tasks)
            table.reserve(job, workers)
        get_task = table.get_task
        launched = sum(get_task(job, worker) is not None for job, worker in requests)
        cancelled = sum(len(table.workers_to_cancel(job)) for job in range(n_jobs))
        for job in range(n_jobs):
            table.remove_job(job)
        return launched, cancelled

    def calls():
        return cycle(sparrow_core.TaskTable(), per_job)

    def python():
        return cycle(PythonTaskTable(), per_job_lists)

    return Case(
        f"late binding, {n_jobs} jobs x {n_tasks} tasks, d={probe_ratio}",
        "jobs",
        n_jobs,
        {"batch": batch, "calls": calls, "python": python},
        lambda out: out,
    )


class LateBinding(KernelBenchmark):
    """1,000 jobs of n_tasks tasks, 2 reservations per task among 10,000 workers."""

    params = ([10, 100],)
    param_names: ClassVar[list[str]] = ["n_tasks"]

    def make_case(self, n_tasks: int) -> Case:
        return late_binding_case(1000, n_tasks)

    def time_cycle_get_task_many(self, n_tasks: int) -> None:
        self.case.variants["batch"]()

    def time_cycle_get_task_calls(self, n_tasks: int) -> None:
        self.case.variants["calls"]()

    def time_python_cycle(self, n_tasks: int) -> None:
        self.case.variants["python"]()

    def track_requests_per_second_batch(self, n_tasks: int) -> float:
        return self.case.rate("batch") * (3 * 2 * n_tasks // 4)  # requests answered per job

    track_requests_per_second_batch.unit = "get_task/s"  # type: ignore[attr-defined]
