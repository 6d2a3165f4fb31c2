"""bench/measure.py's KernelBenchmark, the base of the gated ratios: what it measures and that asv
leaves the base itself alone."""

from __future__ import annotations

import inspect
import time

import pytest

from bench import bench_queue, bench_sampling, bench_task_table
from bench.measure import Case, KernelBenchmark


def spin(seconds: float) -> None:
    """Busy CPU for `seconds` (the ratio is of CPU time: a sleep would not count)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


class Spinning(KernelBenchmark):
    """A case whose kernel takes `kernel` s of CPU and whose baseline 10 ms."""

    compared = "fast"

    def make_case(self, kernel: float) -> Case:
        return Case("spin", "runs", 1, {"fast": lambda: spin(kernel), "python": lambda: spin(0.01)}, lambda out: out)


def test_time_vs_python_is_the_kernels_share_of_the_baselines_cpu_time() -> None:
    """A kernel of 1 ms against a 10 ms baseline measures about 0.1; made 4x slower, about 0.4:
    the ratio rises with the kernel's time, as asv's lower-is-better checks need."""
    fast, slow = Spinning(), Spinning()
    fast.setup(0.001)
    slow.setup(0.004)
    assert 0.07 < fast.track_time_vs_python(0.001) < 0.15
    assert 0.3 < slow.track_time_vs_python(0.004) < 0.5


def test_the_base_is_abstract_and_says_its_unit() -> None:
    """asv skips abstract classes, so importing the base into a benchmark module adds no benchmark;
    the ratio's unit is set once, for every subclass."""
    assert inspect.isabstract(KernelBenchmark)
    assert KernelBenchmark.track_time_vs_python.unit == "ratio"  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        KernelBenchmark()  # type: ignore[abstract]


@pytest.mark.parametrize(
    "cls",
    [
        bench_sampling.BatchSampling,
        bench_sampling.CandidateSampling,
        bench_sampling.PerTaskSampling,
        bench_sampling.ConstrainedSampling,
        bench_queue.QueuePushPop,
        bench_task_table.LateBinding,
    ],
)
def test_every_kernel_class_has_the_gated_ratio(cls) -> None:
    """Each kernel benchmark class inherits track_time_vs_python and compares a variant its case has."""
    assert issubclass(cls, KernelBenchmark) and not inspect.isabstract(cls)
    params = [p[0] for p in getattr(cls, "params", ())]
    benchmark = cls()
    benchmark.setup(*params) if params else benchmark.setup()
    assert cls.compared in benchmark.case.variants
