"""pytest-benchmark cases of the late-binding task table (bench/bench_task_table.py): the
kernel (batch and single calls) and the pure-Python table on the same jobs and requests,
checked to launch and cancel alike. CI runs them once; add --benchmark-enable to time them."""

import pytest

import sparrow_core
from bench.bench_task_table import PythonTaskTable, late_binding_case


@pytest.mark.parametrize("variant", ["batch", "calls", "python"])
def test_late_binding_variant(benchmark, variant):
    """100 jobs of 100 tasks: every task launched once, the same number of workers cancelled."""
    case = late_binding_case(100, 100)
    benchmark.group = case.name
    launched, cancelled = benchmark(case.variants[variant])
    assert launched == 100 * 100 and cancelled > 0
    assert (launched, cancelled) == case.variants["python"]()


def test_python_table_answers_like_the_kernel():
    """The baseline table gives the same launched / none answers and cancellations."""
    kernel, python = sparrow_core.TaskTable(), PythonTaskTable()
    for table in (kernel, python):
        table.add_job(1, 3)
        table.reserve(1, [4, 5, 6, 4, 7])
    for worker in [5, 4, 9, 4, 6]:
        assert (kernel.get_task(1, worker) is None) == (python.get_task(1, worker) is None)
    assert kernel.workers_to_cancel(1).tolist() == python.workers_to_cancel(1) == [7]
