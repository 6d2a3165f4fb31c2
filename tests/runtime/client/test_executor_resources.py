"""SparrowExecutor and Client with resources: every job carries its request (the executor's, or map's
and submit_many's JobOptions), tasks run on node monitors
that hold them (detected CPUs and memory), a request no node monitor holds fails saying so, and a bad
amount is a ValueError before anything is sent."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from sparrow_runtime import Client, JobOptions, SparrowExecutor
from sparrow_runtime.client.job import build_submit
from sparrow_runtime.wire.messages import SubmitJob


@pytest.fixture
def cluster(thread_cluster):
    return thread_cluster


def record_resources(executor: SparrowExecutor) -> list:
    """The resources of each SubmitJob the executor's client sends, in a list that grows as it sends."""
    client = executor.client
    seen: list = []
    send = client._send

    def recorded(msgs):
        seen.extend((m.resources, len(m.tasks)) for m in msgs if type(m) is SubmitJob)
        return send(msgs)

    client._send = recorded
    return seen


def _square(x: int) -> int:
    return x * x


def test_requests_travel_with_their_jobs_and_the_tasks_run(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, resources={"cpus": 0.5}, chunksize=5) as ex:
        seen = record_resources(ex)
        assert ex.submit(_square, 3).result(timeout=30) == 9
        assert list(ex.map(_square, range(5), resources="cpus=1,memory=1MiB")) == [0, 1, 4, 9, 16]
        futures = ex.submit_many([(_square, (i,), {}) for i in range(3)], JobOptions(resources={"memory": "1MiB"}))
        assert [f.result(timeout=30) for f in futures] == [0, 1, 4]
    assert seen == [({"cpus": 500}, 1), ({"cpus": 1000, "memory": 2**20}, 5), ({"memory": 2**20}, 3)]


def test_a_request_nothing_holds_fails_naming_the_largest_capacity(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        (future,) = ex.submit_many([(_square, (2,), {})], JobOptions(resources={"gpu": 64}))
        with pytest.raises(Exception, match="no live node monitor has the resources gpu=64"):
            future.result(timeout=60)


@pytest.mark.parametrize("bad", [{"gpu": -1}, {"cpus": float("nan")}, "memory=4XB", {"GPU": 1}])
def test_bad_amounts_are_refused_before_anything_is_sent(cluster, bad):
    with pytest.raises(ValueError, match=r"gpu|cpus|memory|GPU"):
        SparrowExecutor(cluster.schedulers, secret=cluster.secret, resources=bad)
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        seen = record_resources(ex)
        with pytest.raises(ValueError):
            ex.map(_square, range(3), resources=bad)
        with pytest.raises(ValueError):
            ex.submit_many([(_square, (1,), {})], JobOptions(resources=bad))
        assert seen == []


def test_a_job_carries_its_request_in_units_and_zero_amounts_ask_for_nothing():
    assert build_submit([b"x"], "", 0, None, None, resources={"gpu": 1, "cpus": 0}).resources == {"gpu": 1}
    assert build_submit([b"x"], "", 0, None, None, resources={"cpus": 0}).resources is None
    assert build_submit([b"x"], "", 0, None, None).resources is None


def test_a_task_whose_own_request_nothing_holds_fails_and_the_jobs_other_tasks_run(cluster):
    """Client.submit_job with per-task requests: the task no node monitor can hold fails saying so, as a
    job of that request would; the job's other tasks run and keep their places."""

    async def main() -> list:
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            job = await client.submit_job([partial(_square, i) for i in range(3)], resources=[None, {"gpu": 64}, None])
            return await job.outcomes()

    first, impossible, last = trio.run(main)
    assert (first.result(), last.result()) == (0, 4)
    with pytest.raises(Exception, match="no live node monitor has the resources gpu=64"):
        impossible.result()
