"""Seeded, cached workload builders of the benchmarks.

Append only: changing a builder changes every figure measured with it, so add a new one
instead. Arrays are returned read-only because the cache shares them between benchmarks.
"""

from __future__ import annotations

import functools

import numpy as np


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@functools.cache
def job_sizes(n_jobs: int, n_tasks: int) -> np.ndarray:
    """n_jobs jobs of n_tasks tasks each (int64)."""
    return _frozen(np.full(n_jobs, n_tasks, dtype=np.int64))


@functools.cache
def candidate_set(n_workers: int, n_candidates: int, seed: int = 0) -> np.ndarray:
    """n_candidates distinct worker ids of [0, n_workers), in random order (a job constraint)."""
    rng = np.random.default_rng(seed)
    return _frozen(rng.choice(n_workers, n_candidates, replace=False).astype(np.int64))


@functools.cache
def constrained_job(n_workers: int, n_tasks: int, constrained_fraction: float, n_candidates: int, seed: int = 0):
    """One entry per task: a tuple of n_candidates distinct workers (a constrained task, with
    probability constrained_fraction) or None (unconstrained)."""
    rng = np.random.default_rng(seed)
    return tuple(
        tuple(rng.choice(n_workers, n_candidates, replace=False).tolist())
        if rng.random() < constrained_fraction
        else None
        for _ in range(n_tasks)
    )


@functools.cache
def job_within_constraint(
    n_workers: int, n_job_candidates: int, n_tasks: int, constrained_fraction: float, n_candidates: int, seed: int = 0
):
    """A job constrained to n_job_candidates distinct workers of [0, n_workers) (an int64 array),
    and one entry per task: a tuple of n_candidates distinct workers, half of them the job's and
    half any (a constrained task, with probability constrained_fraction), or None."""
    rng = np.random.default_rng(seed)
    job = rng.choice(n_workers, n_job_candidates, replace=False).astype(np.int64)
    tasks = tuple(
        tuple(
            rng.choice(job, n_candidates // 2, replace=False).tolist()
            + rng.choice(n_workers, n_candidates - n_candidates // 2, replace=False).tolist()
        )
        if rng.random() < constrained_fraction
        else None
        for _ in range(n_tasks)
    )
    return _frozen(job), tasks


@functools.cache
def queue_pushes(n_pushes: int, n_users: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job_ids, users, priorities) of n_pushes reservations: jobs of 1-8 reservations, each
    job of one user drawn uniformly from n_users, priorities 0-3, jobs interleaved."""
    rng = np.random.default_rng(seed)
    per_job = rng.integers(1, 9, n_pushes)
    job_of_push = np.repeat(np.arange(n_pushes), per_job)[:n_pushes]
    rng.shuffle(job_of_push)
    users = rng.integers(0, n_users, n_pushes)[job_of_push]
    priorities = rng.integers(0, 4, n_pushes)[job_of_push]
    return _frozen(job_of_push.astype(np.int64)), _frozen(users.astype(np.int64)), _frozen(priorities.astype(np.int64))


@functools.cache
def late_binding_jobs(n_jobs: int, n_tasks: int, n_workers: int, probe_ratio: float, seed: int = 0):
    """Late binding of n_jobs jobs: (probes, offsets, request_jobs, request_workers).
    Job j's reservations are at probes[offsets[j]:offsets[j+1]] (ceil(d*m) distinct workers
    each). Three quarters of each job's reservations (at least m when d >= 4/3) ask get_task,
    all jobs' requests interleaved at random; the other quarter is left to cancel."""
    rng = np.random.default_rng(seed)
    k = int(np.ceil(probe_ratio * n_tasks - 1e-9))
    probes = np.concatenate([rng.choice(n_workers, k, replace=False) for _ in range(n_jobs)]).astype(np.int64)
    offsets = np.arange(0, k * (n_jobs + 1), k, dtype=np.int64)
    asking = (3 * k) // 4
    chosen = np.concatenate([j * k + rng.permutation(k)[:asking] for j in range(n_jobs)])
    rng.shuffle(chosen)
    request_jobs = (chosen // k).astype(np.int64)
    return _frozen(probes), _frozen(offsets), _frozen(request_jobs), _frozen(probes[chosen])
