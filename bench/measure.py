"""Kernel-versus-baseline cases shared by the asv classes, `python -m benchtools.report` and the
pytest-benchmark tests: one unit of work, done by the kernel (one or more ways) and by a
pure-Python baseline, timed in the same process so every figure is also a ratio."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

try:  # the runtime's own (sparrow_experiments/machine.py)
    from sparrow_experiments.machine import cpu_counters as cpu_counters
    from sparrow_experiments.machine import steal_percent as steal_percent
except ImportError:  # an older sparrow_runtime (asv history): no steal figure

    def cpu_counters() -> list[int] | None:
        return None

    def steal_percent(before: list[int] | None, after: list[int] | None) -> float | None:
        return None


def best_seconds(fn: Callable[[], object], repeat: int = 5, clock: Callable[[], float] = time.perf_counter) -> float:
    """The best (smallest) time of fn() by `clock` (default: wall time) over `repeat` runs: the
    least disturbed one on a machine shared with other work."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
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

    def relative_time(self, variant: str, rounds: int = 5) -> float:
        """The variant's CPU time over the pure-Python baseline's (0.05: 20x faster), the best of
        each over `rounds` rounds that run the baseline once and the (much shorter) variant three
        times. CPU time, not wall time: on a shared machine a
        100 ms baseline is almost always preempted and a 1 ms kernel call seldom, so wall times
        would make the ratio follow the machine's load (measured: 2x apart at a load of 4 on 2
        cores; in CPU time within a few percent)."""
        kernel, python = float("inf"), float("inf")
        for _ in range(rounds):
            python = min(python, best_seconds(self.variants["python"], 1, time.process_time))
            kernel = min(kernel, best_seconds(self.variants[variant], 3, time.process_time))
        return kernel / python


class KernelBenchmark(abc.ABC):
    """Base of the asv classes over one Case: `setup` builds it with `make_case(*params)`, and
    `track_time_vs_python` is the time of the `compared` variant over the pure-Python baseline's,
    both measured in the same run. Lower is better, as asv assumes of every benchmark (its
    regression checks, `asv continuous`, the dashboard's regressions), and a ratio of one run
    cancels most of a shared machine's noise: `python -m benchtools.gate` holds these to a factor.
    asv skips this class itself (it is abstract)."""

    compared: ClassVar[str] = "batch"

    @abc.abstractmethod
    def make_case(self, *params: Any) -> Case:
        """The Case of one combination of the class's params."""

    def setup(self, *params: Any) -> None:
        self.case = self.make_case(*params)

    def track_time_vs_python(self, *params: Any) -> float:
        return self.case.relative_time(self.compared)

    track_time_vs_python.unit = "ratio"  # type: ignore[attr-defined]
