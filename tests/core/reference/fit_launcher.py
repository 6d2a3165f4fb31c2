"""Reference model of csrc/sparrow/resources.h and fit_launcher.h with the binding's face: the hosts
whose capacity holds a request, and which waiting reservation a host launches (the head if it fits;
else, while the head has been passed over fewer than max_skips times, the first of the window that
fits; else none)."""

from __future__ import annotations

import numpy as np

MAX_RESOURCES = 64


def _rows(values, columns: int, name: str) -> list[list[int]]:
    rows = [[int(x) for x in row] for row in values]
    for row in rows:
        if len(row) != columns:
            raise ValueError(f"{name} must be two-dimensional with {columns} columns")
    return rows


def _check_kinds(r: int) -> None:
    if not 1 <= r <= MAX_RESOURCES:
        raise ValueError(f"resource kinds must be in [1, {MAX_RESOURCES}], got {r}")


def _check_amounts(values: list[int], name: str) -> None:
    for k, amount in enumerate(values):
        if amount < 0:
            raise ValueError(f"{name}[{k}] must be >= 0, got {amount}")


def fits(free: list[int], request: list[int]) -> bool:
    return all(q <= f for q, f in zip(request, free))


def feasible_workers(capacities, request) -> np.ndarray:
    want = [int(x) for x in request]
    _check_kinds(len(want))
    _check_amounts(want, "request")
    hosts = _rows(capacities, len(want), "capacities")
    return np.array([w for w, cap in enumerate(hosts) if fits(cap, want)], dtype=np.int64)


def choose_launch(free, requests, head_skips: int = 0, window: int = 8, max_skips: int = 8) -> int | None:
    have = [int(x) for x in free]
    waiting = _rows(requests, len(have), "requests")
    if window < 1:
        raise ValueError(f"fit window must be >= 1, got {window}")
    if max_skips < 0:
        raise ValueError(f"fit max_skips must be >= 0, got {max_skips}")
    _check_kinds(len(have))
    if head_skips < 0:
        raise ValueError(f"head_skips must be >= 0, got {head_skips}")
    _check_amounts(have, "free")
    _check_amounts([x for row in waiting for x in row], "requests")
    if not waiting:
        return None
    if fits(have, waiting[0]):
        return 0
    if head_skips >= max_skips:
        return None
    for i in range(1, min(len(waiting), window)):
        if fits(have, waiting[i]):
            return i
    return None
