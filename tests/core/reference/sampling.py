"""Reference model of csrc/sparrow/sampling.h: probe_count, Floyd's algorithm (bitmap path:
below32 draws; above 2**28 ids: below draws), the wrap rule when k > n, sampling from
candidates, per-task sampling and per-task constrained sampling, draw for draw."""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def _check_candidates(candidates: Sequence[int], n_workers: int) -> None:
    seen: set[int] = set()
    for c in candidates:
        if not 0 <= c < n_workers:
            raise ValueError(f"candidates: worker id {c} is out of range [0, {n_workers})")
        if c in seen:
            raise ValueError(f"candidates: worker id {c} appears twice")
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


def sample_constrained(rng: Rng, n_workers: int, task_candidates, probe_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Each constrained task: ceil(d) probes among its candidates; the unconstrained tasks
    together: probe_count(m_u, d) probes on workers not probed yet (rejection sampling with
    below(n) while free >= 2k, else Floyd over the free workers in id order, then wrap)."""
    per_task = probe_count(1, probe_ratio)
    workers: list[int] = []
    tasks: list[int] = []
    n_unconstrained = 0
    for t, entry in enumerate(task_candidates):
        candidates = [] if entry is None else [int(c) for c in entry]
        if not candidates:
            n_unconstrained += 1
            continue
        _check_candidates(candidates, n_workers)
        probes = _sample_from(rng, candidates, per_task)
        workers += probes
        tasks += [t] * len(probes)
    k = probe_count(n_unconstrained, probe_ratio)
    if k > 0:
        _check_sizes(n_workers, k, "n_workers")
        taken = set(workers)
        free = n_workers - len(taken)
        if free >= 2 * k:
            drawn = []
            while len(drawn) < k:
                w = rng.below(n_workers)
                if w not in taken:
                    taken.add(w)
                    drawn.append(w)
        else:
            free_list = [w for w in range(n_workers) if w not in taken]
            if not free_list:
                drawn = sample_workers(rng, n_workers, k)
            else:
                on_free = min(k, free)
                drawn = _sample_from(rng, free_list, on_free)
                if k > on_free:
                    drawn += sample_workers(rng, n_workers, k - on_free)
        workers += drawn
        tasks += [-1] * len(drawn)
    return np.asarray(workers, dtype=np.int64), np.asarray(tasks, dtype=np.int64)
