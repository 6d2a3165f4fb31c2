"""Probe selection: the kernels (sparrow_core.sample_*) beside pure-Python equivalents built
on random.sample. Figures: jobs sampled per second; ratios to the baseline.

Import-safe: with a sparrow_core lacking a kernel, its benchmarks are skipped (setup raises
NotImplementedError), never an import error.
"""

from __future__ import annotations

import math
import random
from typing import ClassVar

import numpy as np

from bench.common import candidate_set, constrained_job, job_sizes, job_within_constraint
from bench.measure import Case, KernelBenchmark

try:
    import sparrow_core
except ImportError:  # the suite must import with any version of the package
    sparrow_core = None


def require(*names: str) -> None:
    """Skip (asv: NotImplementedError in setup) unless sparrow_core has every name."""
    if sparrow_core is None or not all(hasattr(sparrow_core, n) for n in names):
        raise NotImplementedError(f"sparrow_core lacks one of {names}")


# ---- pure-Python baselines ----


def python_sample_batch(rng: random.Random, n_workers: int, n_tasks: int, probe_ratio: float, candidates=None):
    """ceil(d*m) distinct workers (wrapping when there are too few), as the kernel does."""
    k = math.ceil(probe_ratio * n_tasks - 1e-9)
    population = range(n_workers) if candidates is None else candidates
    n = len(population)
    return list(population) * (k // n) + rng.sample(population, k % n) if k >= n else rng.sample(population, k)


def python_sample_constrained(rng: random.Random, n_workers: int, task_candidates, probe_ratio: float):
    """ceil(d) probes per constrained task among its candidates, then ceil(d*m_u) probes for
    the unconstrained tasks on workers not probed yet."""
    per_task = math.ceil(probe_ratio - 1e-9)
    workers, tasks, n_free = [], [], 0
    for t, candidates in enumerate(task_candidates):
        if candidates is None:
            n_free += 1
            continue
        workers += rng.sample(candidates, per_task)
        tasks += [t] * per_task
    taken, k = set(workers), math.ceil(probe_ratio * n_free - 1e-9)
    while k:
        w = rng.randrange(n_workers)
        if w not in taken:
            taken.add(w)
            workers.append(w)
            tasks.append(-1)
            k -= 1
    return workers, tasks


def python_sample_job(rng: random.Random, job_candidates: list[int], task_candidates, probe_ratio: float):
    """sample_job's work: ceil(d) probes per constrained task among its candidates that are also the
    job's, then ceil(d*m_u) probes for the unconstrained tasks on job candidates not probed yet."""
    per_task = math.ceil(probe_ratio - 1e-9)
    job = set(job_candidates)
    workers, tasks, n_free = [], [], 0
    for t, candidates in enumerate(task_candidates):
        if candidates is None:
            n_free += 1
            continue
        allowed = [w for w in candidates if w in job]
        workers += rng.sample(allowed, per_task) if per_task <= len(allowed) else allowed * per_task
        tasks += [t] * per_task
    taken, k = set(workers), math.ceil(probe_ratio * n_free - 1e-9)
    while k:
        w = job_candidates[rng.randrange(len(job_candidates))]
        if w not in taken:
            taken.add(w)
            workers.append(w)
            tasks.append(-1)
            k -= 1
    return workers, tasks


def python_sample_prefer(rng: random.Random, n_workers: int, preferred, probe_ratio: float):
    """Each task's ceil(d) probes: min(|Q|, max(ceil(d) - 1, 1)) of its preferred workers Q, the
    rest on random workers outside Q (sample_job's `prefer` without constraints)."""
    per_task = math.ceil(probe_ratio - 1e-9)
    workers, tasks = [], []
    for t, q in enumerate(preferred):
        a = min(len(q), max(per_task - 1, 1))
        drawn = rng.sample(q, a)
        taken = set(q)
        while len(drawn) < per_task:
            w = rng.randrange(n_workers)
            if w not in taken:
                taken.add(w)
                drawn.append(w)
        workers += drawn
        tasks += [t] * per_task
    return workers, tasks


# ---- cases ----


def batch_case(n_workers: int, n_tasks: int, probe_ratio: float = 2.0, n_jobs: int = 2000) -> Case:
    """Batch sampling of n_jobs jobs: one sample_batch_many call, one sample_batch call per
    job, and random.sample per job."""
    require("sample_batch", "sample_batch_many")
    sizes = job_sizes(n_jobs, n_tasks)
    rng, py = sparrow_core.Rng(1), random.Random(1)

    def batch():
        return sparrow_core.sample_batch_many(rng, n_workers, sizes, probe_ratio)[1]

    def calls():
        return [sparrow_core.sample_batch(rng, n_workers, n_tasks, probe_ratio) for _ in range(n_jobs)]

    def python():
        return [python_sample_batch(py, n_workers, n_tasks, probe_ratio) for _ in range(n_jobs)]

    def summarize(out):
        return (len(out) - 1, int(out[-1])) if hasattr(out, "dtype") else (len(out), sum(len(j) for j in out))

    return Case(
        f"batch sampling, {n_tasks} tasks x d={probe_ratio} among {n_workers} workers",
        "jobs",
        n_jobs,
        {"batch": batch, "calls": calls, "python": python},
        summarize,
    )


def candidates_case(n_workers: int, n_candidates: int, n_tasks: int, n_jobs: int = 2000) -> Case:
    """Batch sampling among a job's candidate workers (a job constraint), d = 2: one
    sample_batch call per job, and (where sample_batch_many takes candidates) all the jobs in
    one sample_batch_many call that checks the shared candidates once."""
    require("sample_batch")
    candidates = candidate_set(n_workers, n_candidates)
    as_list = candidates.tolist()
    sizes = job_sizes(n_jobs, n_tasks)
    rng, py = sparrow_core.Rng(2), random.Random(2)

    def batch():
        return sparrow_core.sample_batch_many(rng, n_workers, sizes, 2.0, candidates=candidates)[1]

    def calls():
        return [sparrow_core.sample_batch(rng, n_workers, n_tasks, 2.0, candidates=candidates) for _ in range(n_jobs)]

    def python():
        return [python_sample_batch(py, n_workers, n_tasks, 2.0, as_list) for _ in range(n_jobs)]

    def summarize(out):
        return int(out[-1]) if hasattr(out, "dtype") else sum(len(j) for j in out)

    variants = {"calls": calls, "python": python}
    try:
        sparrow_core.sample_batch_many(rng, n_workers, sizes[:1], 2.0, candidates=candidates)
        variants["batch"] = batch
    except TypeError:  # an older sparrow_core: sample_batch_many without candidates
        pass
    return Case(f"sampling {2 * n_tasks} of {n_candidates} candidates", "jobs", n_jobs, variants, summarize)


def per_task_case(n_workers: int, n_tasks: int, d: int = 2, n_jobs: int = 500) -> Case:
    """Per-task sampling: d distinct workers for each task of each job."""
    require("sample_per_task")
    rng, py = sparrow_core.Rng(3), random.Random(3)

    def calls():
        return [sparrow_core.sample_per_task(rng, n_workers, n_tasks, d) for _ in range(n_jobs)]

    def python():
        return [[py.sample(range(n_workers), d) for _ in range(n_tasks)] for _ in range(n_jobs)]

    return Case(
        f"per-task sampling, {n_tasks} tasks x {d} among {n_workers} workers",
        "jobs",
        n_jobs,
        {"calls": calls, "python": python},
        lambda out: sum(len(j) * len(j[0]) for j in out),
    )


def constrained_case(n_workers: int, n_tasks: int, n_jobs: int = 500) -> Case:
    """Per-task constrained sampling: half the tasks constrained to 10 workers each, d = 2."""
    require("sample_constrained")
    job = constrained_job(n_workers, n_tasks, 0.5, 10)
    as_lists = [None if c is None else list(c) for c in job]
    rng, py = sparrow_core.Rng(4), random.Random(4)

    flat = np.array([w for c in job if c is not None for w in c], dtype=np.int64)
    offsets = np.cumsum([0] + [0 if c is None else len(c) for c in job], dtype=np.int64)

    def calls():
        return [sparrow_core.sample_constrained(rng, n_workers, as_lists, 2.0)[0] for _ in range(n_jobs)]

    def flat_calls():
        return [sparrow_core.sample_constrained_flat(rng, n_workers, flat, offsets, 2.0)[0] for _ in range(n_jobs)]

    def python():
        return [python_sample_constrained(py, n_workers, as_lists, 2.0)[0] for _ in range(n_jobs)]

    variants = {"calls": calls, "python": python}
    if hasattr(sparrow_core, "sample_constrained_flat"):  # the suite runs against older builds too
        variants["flat"] = flat_calls
    return Case(
        f"constrained sampling, {n_tasks} tasks among {n_workers} workers",
        "jobs",
        n_jobs,
        variants,
        lambda out: sum(len(j) for j in out),
    )


def job_case(n_workers: int, n_tasks: int, n_job_candidates: int, n_jobs: int = 500) -> Case:
    """sample_job: a job constrained to n_job_candidates workers, half its tasks also constrained to
    10 workers (5 of them the job's), d = 2; per-task lists, or flat arrays + offsets."""
    require("sample_job")
    job, tasks = job_within_constraint(n_workers, n_job_candidates, n_tasks, 0.5, 10)
    as_lists, job_list = [None if c is None else list(c) for c in tasks], job.tolist()
    flat = np.array([w for c in tasks if c is not None for w in c], dtype=np.int64)
    offsets = np.cumsum([0] + [0 if c is None else len(c) for c in tasks], dtype=np.int64)
    rng, py = sparrow_core.Rng(5), random.Random(5)

    def calls():
        return [sparrow_core.sample_job(rng, n_workers, n_tasks, 2.0, job, as_lists)[0] for _ in range(n_jobs)]

    def flat_calls():
        return [sparrow_core.sample_job(rng, n_workers, n_tasks, 2.0, job, flat, offsets)[0] for _ in range(n_jobs)]

    def python():
        return [python_sample_job(py, job_list, as_lists, 2.0)[0] for _ in range(n_jobs)]

    return Case(
        f"job sampling, {n_tasks} tasks, job constraint {n_job_candidates} of {n_workers} workers",
        "jobs",
        n_jobs,
        {"calls": calls, "flat": flat_calls, "python": python},
        lambda out: sum(len(j) for j in out),
    )


def prefer_case(n_workers: int, n_tasks: int, n_preferred: int = 2, n_jobs: int = 500) -> Case:
    """sample_job with `prefer` ("probe these first, then random ones"): every task prefers
    n_preferred workers (where its inputs are), d = 2; per-task lists, or flat arrays + offsets."""
    require("sample_job")
    preferred = constrained_job(n_workers, n_tasks, 1.0, n_preferred)
    as_lists = [list(p) for p in preferred]
    flat = np.array([w for p in preferred for w in p], dtype=np.int64)
    offsets = np.cumsum([0] + [len(p) for p in preferred], dtype=np.int64)
    rng, py = sparrow_core.Rng(6), random.Random(6)
    try:
        sparrow_core.sample_job(rng, n_workers, n_tasks, 2.0, prefer=as_lists)
    except TypeError:  # an older sparrow_core: sample_job without prefer
        raise NotImplementedError("this sparrow_core's sample_job takes no prefer") from None

    def calls():
        return [sparrow_core.sample_job(rng, n_workers, n_tasks, 2.0, prefer=as_lists)[0] for _ in range(n_jobs)]

    def flat_calls():
        return [
            sparrow_core.sample_job(rng, n_workers, n_tasks, 2.0, prefer=flat, prefer_offsets=offsets)[0]
            for _ in range(n_jobs)
        ]

    def python():
        return [python_sample_prefer(py, n_workers, as_lists, 2.0)[0] for _ in range(n_jobs)]

    return Case(
        f"preferring sampling, {n_tasks} tasks preferring {n_preferred} of {n_workers} workers each",
        "jobs",
        n_jobs,
        {"calls": calls, "flat": flat_calls, "python": python},
        lambda out: sum(len(j) for j in out),
    )


# ---- asv ----


class BatchSampling(KernelBenchmark):
    """Jobs of n_tasks tasks, 2 probes per task, among n_workers workers (2,000 jobs a run)."""

    params = ([1_000, 10_000], [10, 100])
    param_names: ClassVar[list[str]] = ["n_workers", "n_tasks"]

    def make_case(self, n_workers: int, n_tasks: int) -> Case:
        return batch_case(n_workers, n_tasks)

    def time_sample_batch_many(self, n_workers: int, n_tasks: int) -> None:
        self.case.variants["batch"]()

    def time_sample_batch_calls(self, n_workers: int, n_tasks: int) -> None:
        self.case.variants["calls"]()

    def time_python_random_sample(self, n_workers: int, n_tasks: int) -> None:
        self.case.variants["python"]()

    def track_jobs_per_second_batch(self, n_workers: int, n_tasks: int) -> float:
        return self.case.rate("batch")

    track_jobs_per_second_batch.unit = "jobs/s"  # type: ignore[attr-defined]


class CandidateSampling(KernelBenchmark):
    """Jobs constrained to n_candidates of 10,000 workers, 10 tasks, d = 2."""

    params = ([50, 1_000],)
    param_names: ClassVar[list[str]] = ["n_candidates"]
    compared = "calls"

    def make_case(self, n_candidates: int) -> Case:
        return candidates_case(10_000, n_candidates, 10)

    def time_sample_batch_candidates(self, n_candidates: int) -> None:
        self.case.variants["calls"]()

    def time_sample_batch_many_candidates(self, n_candidates: int) -> None:
        if "batch" not in self.case.variants:
            raise NotImplementedError("sample_batch_many takes no candidates in this sparrow_core")
        self.case.variants["batch"]()

    def time_python_random_sample(self, n_candidates: int) -> None:
        self.case.variants["python"]()


class PerTaskSampling(KernelBenchmark):
    """Per-task sampling ("power of two choices") of 100-task jobs among 10,000 workers."""

    compared = "calls"

    def make_case(self) -> Case:
        return per_task_case(10_000, 100)

    def time_sample_per_task(self) -> None:
        self.case.variants["calls"]()

    def time_python_random_sample(self) -> None:
        self.case.variants["python"]()


class ConstrainedSampling(KernelBenchmark):
    """Mixed jobs of 100 tasks (half constrained to 10 workers) among 10,000 workers."""

    compared = "calls"

    def make_case(self) -> Case:
        return constrained_case(10_000, 100)

    def time_sample_constrained(self) -> None:
        self.case.variants["calls"]()

    def time_python_sample_constrained(self) -> None:
        self.case.variants["python"]()

    def time_sample_constrained_flat(self) -> None:
        if "flat" not in self.case.variants:
            raise NotImplementedError("this build has no sample_constrained_flat")
        self.case.variants["flat"]()


class JobSampling(KernelBenchmark):
    """sample_job: 100-task jobs constrained to 1,000 of 10,000 workers, half their tasks constrained too."""

    compared = "flat"

    def make_case(self) -> Case:
        return job_case(10_000, 100, 1_000)

    def time_sample_job(self) -> None:
        self.case.variants["calls"]()

    def time_sample_job_flat(self) -> None:
        self.case.variants["flat"]()

    def time_python_sample_job(self) -> None:
        self.case.variants["python"]()


class PreferSampling(KernelBenchmark):
    """sample_job with `prefer`: 16- and 100-task jobs among 10,000 workers, each task preferring 2."""

    params = ([16, 100],)
    param_names: ClassVar[list[str]] = ["n_tasks"]
    compared = "flat"

    def make_case(self, n_tasks: int) -> Case:
        return prefer_case(10_000, n_tasks)

    def time_sample_job_prefer(self, n_tasks: int) -> None:
        self.case.variants["calls"]()

    def time_sample_job_prefer_flat(self, n_tasks: int) -> None:
        self.case.variants["flat"]()

    def time_python_sample_prefer(self, n_tasks: int) -> None:
        self.case.variants["python"]()
