"""Kernel-versus-baseline cases shared by the asv classes, `python -m bench.report` and the
pytest-benchmark tests: one unit of work, done by the kernel (one or more ways) and by a
pure-Python baseline, timed in the same process so every figure is also a ratio."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def best_seconds(fn: Callable[[], object], repeat: int = 5) -> float:
    """The best (smallest) wall time of fn() over `repeat` runs: the least disturbed one on
    a machine shared with other work."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@dataclass(frozen=True)
class Case:
    """`work` units (jobs, pairs, requests) done by each variant. Variants other than
    "python" run the kernel; "python" is the pure-Python baseline. summarize(output) of every
    variant must be equal: the baseline does the same work."""

    name: str
    unit: str
    work: int
    variants: dict[str, Callable[[], object]]
    summarize: Callable[[object], object]

    def rate(self, variant: str, repeat: int = 5) -> float:
        """Units of work per second of the variant, best of `repeat` runs."""
        return self.work / best_seconds(self.variants[variant], repeat)

    def speedup(self, variant: str, repeat: int = 5) -> float:
        """How many times faster the variant is than the pure-Python baseline."""
        return self.rate(variant, repeat) / self.rate("python", repeat)


def cpu_counters() -> list[int] | None:
    """The machine's cumulative CPU time counters (the `cpu` line of /proc/stat), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_percent(before: list[int] | None, after: list[int] | None) -> float | None:
    """Percent of the CPU time between two `cpu_counters()` the hypervisor gave to other machines
    (steal): a shared virtual machine's figures are only comparable at similar steal."""
    if before is None or after is None or len(before) < 8:
        return None
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(deltas[:8])  # user nice system idle iowait irq softirq steal (guest time is in user)
    return 100.0 * deltas[7] / total if total else 0.0
