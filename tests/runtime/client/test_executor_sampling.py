"""SparrowExecutor(sampling=...) and DaskScheduler(sampling=...): every job they send carries the
per-task sampling option (SubmitJob.sampling) and still gives the right results; batch stays the
default; a bad sampling is refused before anything is sent."""

from __future__ import annotations

import pytest

from sparrow_runtime import SparrowExecutor
from sparrow_runtime.wire.messages import SubmitJob


@pytest.fixture
def cluster(thread_cluster):
    return thread_cluster


def record_sampling(executor: SparrowExecutor) -> list[str]:
    """The sampling of each SubmitJob the executor's client sends, in a list that grows as it sends."""
    client = executor.client
    seen: list[str] = []
    send = client._send

    def recorded(msgs):
        seen.extend(m.sampling for m in msgs if type(m) is SubmitJob)
        return send(msgs)

    client._send = recorded
    return seen


def _square(x: int) -> int:
    return x * x


def test_a_per_task_executor_sends_every_job_per_task_and_gets_the_results(cluster):
    """map (jobs of 4 tasks), submit and submit_many of an executor made with sampling="per_task":
    every SubmitJob says per_task, and every result is right."""
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, sampling="per_task", chunksize=4) as ex:
        seen = record_sampling(ex)
        assert ex.sampling == "per_task"
        assert list(ex.map(_square, range(10))) == [x * x for x in range(10)]
        assert ex.submit(_square, 12).result(timeout=30) == 144
        assert [f.result(timeout=30) for f in ex.submit_many([(_square, (i,), {}) for i in range(3)])] == [0, 1, 4]
    assert len(seen) >= 5 and set(seen) == {"per_task"}


def test_an_executor_samples_by_batch_unless_told(cluster):
    """Without sampling=, the executor's jobs use batch sampling, as before the option existed."""
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        seen = record_sampling(ex)
        assert list(ex.map(_square, range(3))) == [0, 1, 4]
    assert ex.sampling == "batch" and seen and set(seen) == {"batch"}


@pytest.mark.parametrize(
    ("sampling", "error", "match"),
    [("power-of-two", ValueError, "sampling: 'power-of-two' is not one of batch, per_task"), (2, TypeError, "str")],
)
def test_an_executor_with_a_bad_sampling_is_refused_before_it_connects(cluster, sampling, error, match):
    """An unknown sampling name, or one that is not a str: a one-line error naming it from the
    constructor, before any connection or thread."""
    with pytest.raises(error, match=match):
        SparrowExecutor(cluster.schedulers, secret=cluster.secret, sampling=sampling)


def test_a_dask_scheduler_passes_sampling_to_its_executor(cluster):
    """DaskScheduler(cluster, sampling="per_task"): the graph's waves go as per-task jobs and the
    result is what Dask's synchronous scheduler gives."""
    dask = pytest.importorskip("dask")
    from sparrow_runtime.dask import DaskScheduler

    inc = dask.delayed(lambda x: x + 1)
    total = dask.delayed(sum)
    graph = total([inc(i) for i in range(8)])
    with DaskScheduler(cluster, sampling="per_task") as scheduler:
        seen = record_sampling(scheduler.executor)
        assert scheduler.executor.sampling == "per_task"
        assert dask.compute(graph, scheduler=scheduler) == dask.compute(graph, scheduler="sync")
    assert seen and set(seen) == {"per_task"}
