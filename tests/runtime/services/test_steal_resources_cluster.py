"""Work stealing of tasks that ask for resources, with real processes (a LocalCluster: a scheduler and two
stealing node monitors with one GPU each, process executors). A long GPU task holds nm-0's GPU; GPU jobs of one
probe each that land there wait for it with a slot free, and nm-1 steals them: every one of them runs at nm-1
before the long task ends, with its own request there (its GPU id, never shared), and tasks that name nothing
run as before."""

from __future__ import annotations

import itertools
import os
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, Constraint, LocalCluster, NodeMonitorConfig, SchedulerConfig

LONG = 6.0  # seconds the long task holds nm-0's GPU (its GPU jobs need about 1.5 s; the rest: room for a busy host)
SHORT_JOBS = 12


def record(kind: str, seconds: float) -> tuple:
    """A task: sleeps, and says where (its node monitor, its GPUs) and when it ran."""
    start = time.time()
    time.sleep(seconds)
    return kind, os.environ.get("SPARROW_NODE"), os.environ.get("SPARROW_GPUS"), start, time.time()


async def run(cluster: LocalCluster) -> tuple[tuple, list[tuple]]:
    async with Client(cluster.schedulers, secret=cluster.secret) as client:
        long_job = await client.submit_job(
            [partial(record, "long", LONG)], resources={"gpu": 1}, constraints=Constraint(("nm-0",))
        )
        await trio.sleep(0.5)  # it runs at nm-0, holding its one GPU
        jobs = [
            await client.submit_job([partial(record, "gpu", 0.1)], resources={"gpu": 1}, probe_ratio=1.0)
            for _ in range(SHORT_JOBS)
        ]
        jobs += [await client.submit_job([partial(record, "plain", 0.05)], probe_ratio=1.0) for _ in range(4)]
        short = [result for job in jobs for result in await job.results()]
        (long,) = await long_job.results()
    return long, short


@pytest.mark.slow
def test_gpu_tasks_waiting_for_a_busy_gpu_are_stolen_by_an_idle_gpu_host_and_keep_their_request():
    with LocalCluster(
        node_monitors=2,
        slots=2,
        resources="gpu=1",
        node_monitor=NodeMonitorConfig(steal=True, executor="process"),
        scheduler=SchedulerConfig(probe_ratio=1.0),
        dashboard=False,
    ) as cluster:
        long, short = trio.run(run, cluster)
    _, long_node, long_gpus, _, long_end = long
    assert (long_node, long_gpus) == ("nm-0", "0")
    gpu = [r for r in short if r[0] == "gpu"]
    assert len(gpu) == SHORT_JOBS
    # nm-0's one GPU was held throughout: each GPU task ran at nm-1 (stolen, or placed there), with its own id
    assert all(node == "nm-1" and gpus == "0" for _, node, gpus, _, _ in gpu), gpu
    assert max(end for *_, end in gpu) < long_end - 1.0, "GPU tasks waited for the long task instead of moving"
    runs = sorted((start, end) for *_, start, end in gpu)
    assert all(e1 <= s2 for (_, e1), (s2, _) in itertools.pairwise(runs)), (
        "nm-1's one GPU was held by two tasks at once"
    )
    assert all(node is None and gpus is None for kind, node, gpus, _, _ in short if kind == "plain")
