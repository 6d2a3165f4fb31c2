"""Reference model of csrc/sparrow/sampling.h and job_probes.h: probe_count, Floyd's algorithm
(bitmap path: below32 draws; above 2**28 ids: below draws), the wrap rule when k > n, sampling
from candidates, per-task sampling and the probes of a job under a job constraint, per-task
constraints and per-task preferences (sample_job, sample_constrained), draw for draw."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from .rng import Rng

BITMAP_LIMIT = 1 << 28  # sampling.h kBitmapLimit: above it Floyd draws with below()


def probe_count(n_tasks: int, probe_ratio: float) -> int:
    """ceil(d * m), with products within 1e-9 (relative) of an integer rounded to it."""
    if n_tasks < 0:
        raise ValueError(f"n_tasks must be >= 0, got {n_tasks}")
    if not (probe_ratio >= 1.0 and math.isfinite(probe_ratio)):
        raise ValueError(f"probe_ratio must be a finite number >= 1, got {probe_ratio}")
    exact = probe_ratio * float(n_tasks)
    nearest = round(exact)  # halves never pass the tolerance test, so the rounding rule is moot
    if abs(exact - nearest) <= 1e-9 * max(1.0, exact):
        return int(nearest)
    return math.ceil(exact)


def _check_sizes(n: int, k: int, n_name: str) -> None:
    if k < 0:
        raise ValueError(f"number of probes must be >= 0, got {k}")
    if n < 0:
        raise ValueError(f"{n_name} must be >= 0, got {n}")
    if n == 0 and k > 0:
        raise ValueError(f"{n_name} is 0: there is no worker to place {k} probes on")


def _floyd(rng: Rng, n: int, k: int) -> list[int]:
    """k distinct indices of [0, n) (k <= n) in the order Floyd's algorithm makes them."""
    draw = rng.below32 if n <= BITMAP_LIMIT else rng.below
    seen: set[int] = set()
    out = []
    for j in range(n - k, n):
        t = draw(j + 1)
        pick = j if t in seen else t
        seen.add(pick)
        out.append(pick)
    return out


def sample_workers(rng: Rng, n: int, k: int, n_name: str = "n_workers") -> list[int]:
    """k ids of [0, n): distinct when k <= n, else every id floor(k/n) times and k mod n more."""
    _check_sizes(n, k, n_name)
    if k == 0:
        return []
    rounds = list(range(n)) * (k // n) if k >= n else []
    return rounds + _floyd(rng, n, k % n)


def _check_candidates(candidates: Sequence[int], n_workers: int, name: str = "candidates") -> None:
    seen: set[int] = set()
    for c in candidates:
        if not 0 <= c < n_workers:
            raise ValueError(f"{name}: worker id {c} is out of range [0, {n_workers})")
        if c in seen:
            raise ValueError(f"{name}: worker id {c} appears twice")
        seen.add(c)


def _sample_from(rng: Rng, candidates: Sequence[int], k: int) -> list[int]:
    return [candidates[i] for i in sample_workers(rng, len(candidates), k, "candidates")]


def sample_batch(rng: Rng, n_workers: int, n_tasks: int, probe_ratio: float, candidates=None) -> np.ndarray:
    if n_workers < 0:
        raise ValueError(f"n_workers must be >= 0, got {n_workers}")
    k = probe_count(n_tasks, probe_ratio)
    if candidates is None:
        return np.asarray(sample_workers(rng, n_workers, k), dtype=np.int64)
    candidates = [int(c) for c in candidates]
    _check_candidates(candidates, n_workers)
    return np.asarray(_sample_from(rng, candidates, k), dtype=np.int64)


def sample_batch_many(rng: Rng, n_workers: int, n_tasks, probe_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    sizes = [probe_count(int(m), probe_ratio) for m in n_tasks]
    flat: list[int] = []
    for k in sizes:
        flat += sample_workers(rng, n_workers, k)
    return np.asarray(flat, dtype=np.int64), np.cumsum([0, *sizes], dtype=np.int64)


def sample_per_task(rng: Rng, n_workers: int, n_tasks: int, d: int) -> np.ndarray:
    if n_tasks < 0:
        raise ValueError(f"n_tasks must be >= 0, got {n_tasks}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    _check_sizes(n_workers, n_tasks * d, "n_workers")
    rows = [sample_workers(rng, n_workers, d) for _ in range(n_tasks)]
    return np.asarray(rows, dtype=np.int64).reshape(n_tasks, d)


class InfeasibleTaskError(ValueError):
    def __init__(self, task: int) -> None:
        super().__init__(f"task {task}: none of its candidate workers is among the job's candidates")
        self.task = task


def _per_task_lists(n_tasks, task_candidates, task_offsets, name: str = "task_candidates") -> list[list[int] | None]:
    """One entry per task (None: unconstrained) from the list or the flat form."""
    if task_candidates is None:
        return [None] * n_tasks
    if task_offsets is None:
        if len(task_candidates) != n_tasks:
            raise ValueError(f"{name} must have one entry per task ({n_tasks}), got {len(task_candidates)}")
        return [None if c is None or len(c) == 0 else [int(w) for w in c] for c in task_candidates]
    flat, offsets = [int(w) for w in task_candidates], [int(o) for o in task_offsets]
    return [flat[lo:hi] or None for lo, hi in pairwise(offsets)]


def _unprobed(rng: Rng, population: list[int] | None, n_pop: int, k: int, taken: set[int]) -> list[int]:
    """k members of the population not in `taken`: rejection sampling with below(n_pop) while at
    least 2k are free, else Floyd over the free members in population order, then the wrap rule
    over the whole population."""
    member = (lambda i: i) if population is None else population.__getitem__
    free = n_pop - len(taken)
    if free >= 2 * k:
        drawn: list[int] = []
        while len(drawn) < k:
            w = member(rng.below(n_pop))
            if w not in taken:
                taken.add(w)
                drawn.append(w)
        return drawn
    free_list = [member(i) for i in range(n_pop) if member(i) not in taken]
    on_free = min(k, free)
    drawn = _sample_from(rng, free_list, on_free) if on_free else []
    if k > on_free:
        drawn += _population(rng, population, n_pop, k - on_free)
    return drawn


def _population(rng: Rng, population: list[int] | None, n_pop: int, k: int) -> list[int]:
    return sample_workers(rng, n_pop, k) if population is None else _sample_from(rng, population, k)


def sample_job(
    rng: Rng,
    n_workers: int,
    n_tasks: int,
    probe_ratio: float,
    candidates=None,
    task_candidates=None,
    task_offsets=None,
    tasks=None,
    prefer=None,
    prefer_offsets=None,
    per_task=False,
) -> tuple[np.ndarray, np.ndarray]:
    """A constrained task may run on its own candidates that are also the job's (none left:
    InfeasibleTaskError, nothing drawn); it gets ceil(d) probes there. A task preferring some of
    its allowed workers Q gets ceil(d) probes made for it: a = min(|Q|, max(ceil(d) - 1, 1)) of Q,
    the rest among its allowed workers outside Q (all on Q when there are none). The remaining
    unconstrained tasks together: probe_count(m_u, d) among the job's candidates not probed yet;
    with per_task (per-task sampling) each of them instead gets ceil(d) probes of its own among
    the job's candidates, in task order with the others. No constrained, preferring or per-task
    task: batch sampling over the job's candidates."""
    if n_workers < 0:
        raise ValueError(f"n_workers must be >= 0, got {n_workers}")
    if n_tasks < 0:
        raise ValueError(f"n_tasks must be >= 0, got {n_tasks}")
    each = probe_count(1, probe_ratio)  # probes per constrained, preferring or per-task task
    population = None if candidates is None else [int(c) for c in candidates]
    if population is not None:
        _check_candidates(population, n_workers)
    n_pop = n_workers if population is None else len(population)
    own = _per_task_lists(n_tasks, task_candidates, task_offsets)
    prefs = _per_task_lists(n_tasks, prefer, prefer_offsets, "prefer")
    members = None if population is None else set(population)
    selected = range(n_tasks) if tasks is None else [int(t) for t in tasks]
    groups, n_unconstrained = [], 0  # (task, allowed workers (None: the job's), preferred ones of them)
    for t in selected:
        if own[t] is None:
            if prefs[t] is not None:
                _check_task_list(prefs[t], n_workers, t, "prefer")
            q = [w for w in prefs[t] or () if members is None or w in members]
            if q or per_task:
                groups.append((t, None, q))
            else:
                n_unconstrained += 1
            continue
        _check_task_list(own[t], n_workers, t, "candidates")
        allowed = own[t] if members is None else [w for w in own[t] if w in members]
        if not allowed:
            raise InfeasibleTaskError(t)
        q = []
        if prefs[t] is not None:
            _check_task_list(prefs[t], n_workers, t, "prefer")
            q = [w for w in allowed if w in set(prefs[t])]
        groups.append((t, allowed, q))
    k = probe_count(n_unconstrained, probe_ratio)
    _check_sizes(n_pop, k, "n_workers" if population is None else "candidates")
    if not groups:
        return np.asarray(_population(rng, population, n_pop, k), dtype=np.int64), np.full(k, -1, dtype=np.int64)
    workers: list[int] = []
    made_for: list[int] = []
    for t, allowed, q in groups:
        if not q and allowed is None:  # per-task sampling
            workers += _population(rng, population, n_pop, each)
        elif not q:
            workers += _sample_from(rng, allowed, each)
        else:
            workers += _sample_preferring(rng, population, n_pop, allowed, q, each)
        made_for += [t] * each
    if k:
        workers += _unprobed(rng, population, n_pop, k, set(workers))
        made_for += [-1] * k
    return np.asarray(workers, dtype=np.int64), np.asarray(made_for, dtype=np.int64)


def _check_task_list(workers: list[int], n_workers: int, t: int, name: str) -> None:
    try:
        _check_candidates(workers, n_workers, name)
    except ValueError as exc:
        raise ValueError(f"task {t}: {exc}") from None


def _sample_preferring(
    rng: Rng, population: list[int] | None, n_pop: int, allowed: list[int] | None, q: list[int], per_task: int
) -> list[int]:
    """A preferring task's probes: a of Q, then per_task - a among its allowed workers (the job's
    when `allowed` is None) outside Q; all on Q when Q is all of them."""
    if allowed is not None:
        population, n_pop = allowed, len(allowed)
    if len(q) == n_pop:
        return _sample_from(rng, q, per_task)
    a = min(len(q), max(per_task - 1, 1))
    drawn = _sample_from(rng, q, a)
    if per_task > a:
        drawn += _unprobed(rng, population, n_pop, per_task - a, set(q))
    return drawn


def sample_constrained(rng: Rng, n_workers: int, task_candidates, probe_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """sample_job without a job constraint."""
    return sample_job(rng, n_workers, len(task_candidates), probe_ratio, task_candidates=task_candidates)
