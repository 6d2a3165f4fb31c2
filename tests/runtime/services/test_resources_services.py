"""Resources per task with real processes: a scheduler and two node monitors of different capacities
(process executors) run a job mix of GPU, CPU and plain tasks. Every task records when it started and
ended and where; at no moment do a host's running tasks hold more than its capacity, GPU ids are never
shared, tasks that name nothing run as before, and a request nothing can hold fails saying so."""

import os
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    TaskFailed,
    serve_node_monitor,
    serve_scheduler,
)

SECRET = "test-secret"
CAPACITY = {"nm0": {"cpus": 2000, "gpu": 1}, "nm1": {"cpus": 4000, "gpu": 2}}
ASKS = {"gpu": {"gpu": 1}, "cpu": {"cpus": 2}, "plain": None}


def record(kind: str, seconds: float) -> tuple:
    """A task: sleeps, and says where (its node monitor, its GPUs) and when it ran."""
    start = time.time()
    time.sleep(seconds)
    return kind, os.environ.get("SPARROW_NODE"), os.environ.get("SPARROW_GPUS"), start, time.time()


async def run_mix(placement_timeout: float = 5.0) -> tuple[list[tuple], str]:
    config = SchedulerConfig(link=LinkConfig(secret=SECRET), placement_timeout=placement_timeout)
    async with trio.open_nursery() as nursery:
        address = await nursery.start(partial(serve_scheduler, config))
        for node_id, capacity in CAPACITY.items():
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(
                        link=LinkConfig(secret=SECRET),
                        schedulers=[address],
                        node_id=node_id,
                        slots=4,
                        executor="process",
                        resources=capacity,
                    ),
                )
            )
        async with Client([address], secret=SECRET) as client:
            jobs = [
                await client.submit_job(
                    [partial(record, kind, 0.3) for _ in range(6)], resources=ASKS[kind], probe_ratio=2.0
                )
                for kind in ("gpu", "cpu", "plain")
            ]
            impossible = await client.submit_job([partial(record, "big", 0.0)], resources={"gpu": 3})
            results = [outcome.result() for job in jobs async for outcome in job.as_completed()]
            (failed,) = [outcome async for outcome in impossible.as_completed()]
        nursery.cancel_scope.cancel()
    assert isinstance(failed.exception, TaskFailed)
    return results, str(failed.exception)


def peak(intervals: list[tuple[float, float, int]]) -> int:
    """The largest sum of amounts held at once by (start, end, amount) intervals."""
    events = sorted([(s, a) for s, _, a in intervals] + [(e, -a) for _, e, a in intervals], key=lambda x: (x[0], x[1]))
    held = most = 0
    for _, change in events:
        held += change
        most = max(most, held)
    return most


@pytest.mark.slow
def test_a_job_mix_never_exceeds_a_hosts_capacity_and_never_shares_a_gpu():
    results, failure = trio.run(partial(run_mix, placement_timeout=1.0))
    assert len(results) == 18
    by_kind = {kind: [r for r in results if r[0] == kind] for kind in ASKS}
    assert all(len(found) == 6 for found in by_kind.values())
    assert all(node in CAPACITY for _, node, _, _, _ in by_kind["gpu"] + by_kind["cpu"])
    assert all(node is None for _, node, _, _, _ in by_kind["plain"])  # told nothing, as before
    for node, capacity in CAPACITY.items():
        gpu = [(s, e, 1) for _, n, _, s, e in by_kind["gpu"] if n == node]
        cpu = [(s, e, 2000) for _, n, _, s, e in by_kind["cpu"] if n == node]
        assert peak(gpu) <= capacity["gpu"]
        assert peak(cpu) <= capacity["cpus"]
        runs = [(s, e, ids) for _, n, ids, s, e in by_kind["gpu"] if n == node]
        assert all(len(ids.split(",")) == 1 for _, _, ids in runs)
        for i, (s1, e1, ids1) in enumerate(runs):
            for s2, e2, ids2 in runs[i + 1 :]:
                assert not (s1 < e2 and s2 < e1 and ids1 == ids2), f"GPU {ids1} of {node} shared"
    assert "no live node monitor has the resources gpu=3" in failure
    assert "the largest capacity seen: gpu=2" in failure
