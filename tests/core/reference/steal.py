"""Reference model of csrc/sparrow/steal.h with the binding's face: the victims an idle worker
asks (Floyd over its n - 1 peers, ids at or above the thief shifted by one), the answer it
steals from (the longest-blocked eligible one; ties: the longer queue, then reservoir sampling
with the Rng) and how many (half the queue rounded up, at most max_take). The victim's side is
ReservationQueue.steal (reservation_queue.py)."""

from __future__ import annotations

import math

import numpy as np

from .rng import Rng
from .sampling import sample_workers


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def choose_victims(rng: Rng, n_workers: int, thief: int, k: int) -> np.ndarray:
    n_workers, thief, k = _int(n_workers, "n_workers"), _int(thief, "thief"), _int(k, "k")
    if n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    if not 0 <= thief < n_workers:
        raise ValueError(f"thief must be in [0, {n_workers}), got {thief}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    peers = sample_workers(rng, n_workers - 1, min(k, n_workers - 1))
    return np.array([p + (p >= thief) for p in peers], dtype=np.int64)


def choose_steal(rng: Rng, stealable, blocked_for, max_take: int = 1, min_blocked: float = 0.0):
    counts = [_int(c, "stealable") for c in stealable]
    ages = [float(a) for a in blocked_for]
    if len(counts) != len(ages):
        raise ValueError("stealable and blocked_for must be one-dimensional of the same length")
    max_take = _int(max_take, "max_take")
    if max_take < 1:
        raise ValueError(f"steal max_take must be >= 1, got {max_take}")
    if not (min_blocked >= 0 and math.isfinite(min_blocked)):
        raise ValueError("steal min_blocked must be finite and >= 0")
    best, ties = -1, 0
    for i, (count, age) in enumerate(zip(counts, ages)):
        if count < 0:
            raise ValueError(f"stealable[{i}] must be >= 0, got {count}")
        if math.isnan(age):
            raise ValueError(f"blocked_for[{i}] is NaN")
        if count == 0 or not age >= min_blocked:
            continue
        if best < 0 or (age, count) > (ages[best], counts[best]):
            best, ties = i, 1
        elif (age, count) == (ages[best], counts[best]):
            ties += 1
            if rng.below(ties) == 0:
                best = i
    if best < 0:
        return None
    return best, min((counts[best] + 1) // 2, max_take)
