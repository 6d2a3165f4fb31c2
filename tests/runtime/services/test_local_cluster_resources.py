"""LocalCluster(resources=...): each node monitor offers what it is given (`--resources`), a map asking
for GPUs runs each task on a node monitor with one free, with device ids of its own there (in
CUDA_VISIBLE_DEVICES and SPARROW_GPUS), tasks asking for whole CPUs run pinned to CPUs of their own, and a
Client job whose tasks ask for different resources runs each task only where its own request fits."""

from __future__ import annotations

import os
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, SparrowExecutor
from sparrow_runtime.services.cpus import available_cpus, can_pin

from ...process_tree import node_monitor_pid


def _where(_: int) -> tuple[str | None, str | None]:
    time.sleep(0.05)
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == os.environ.get("SPARROW_GPUS")
    return os.environ.get("SPARROW_NODE"), os.environ.get("SPARROW_GPUS")


def test_node_monitors_offer_what_they_are_given_and_gpu_tasks_get_their_own_ids():
    with (
        LocalCluster(node_monitors=2, slots=2, resources=[{"gpu": 1}, "gpu=2"], dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        found = list(ex.map(_where, range(8), resources={"gpu": 1}))
    ids = {node: set() for node in cluster.node_ids}
    for node, gpus in found:
        ids[node].add(gpus)
    assert ids[cluster.node_ids[0]] <= {"0"} and ids[cluster.node_ids[1]] <= {"0", "1"}


def _cpus(_: int) -> tuple[list[int], float, float]:
    """The CPUs this task's worker may run on, and when it ran."""
    start = time.time()
    time.sleep(0.4)
    return sorted(os.sched_getaffinity(0)), start, time.time()


@pytest.mark.skipif(not can_pin() or len(available_cpus()) < 2, reason="needs 2 CPUs this process may pin to")
def test_tasks_asking_for_whole_cpus_run_pinned_to_cpus_of_their_own_and_others_run_anywhere():
    """One node monitor with 2 CPUs and 2 slots: two cpus=1 tasks that run at once are each pinned to one CPU,
    not the same; tasks asking for nothing afterwards (on the same workers) run on every CPU again."""
    cpus = available_cpus()[:2]
    with (
        LocalCluster(node_monitors=1, slots=2, resources="cpus=2", share_cpus=True, dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        pinned = list(ex.map(_cpus, range(4), resources={"cpus": 1}))
        plain = list(ex.map(_cpus, range(4)))
    assert all(len(where) == 1 and where[0] in available_cpus() for where, _, _ in pinned), pinned
    overlapping = [
        (a, b) for i, (a, s1, e1) in enumerate(pinned) for b, s2, e2 in pinned[i + 1 :] if s1 < e2 and s2 < e1
    ]
    assert overlapping and all(a != b for a, b in overlapping), pinned
    assert all(set(cpus) <= set(where) for where, _, _ in plain), plain


def test_a_bad_amount_or_count_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="gpu=-1"):
        LocalCluster(node_monitors=1, resources={"gpu": -1}, dashboard=False)
    with pytest.raises(ValueError, match="one entry per node monitor"):
        LocalCluster(node_monitors=2, resources=[{"gpu": 1}], dashboard=False)


def _stay(task: int) -> tuple[int, int, float, float]:
    """Task `task`, its node monitor (the parent of the worker process that ran it) and when it ran."""
    start = time.time()
    time.sleep(0.2)
    return task, node_monitor_pid(), start, time.time()


def test_a_job_of_per_task_requests_runs_each_task_only_where_its_request_fits():
    """nm-0 holds license=1, nm-1 license=4 (2 slots each): the license=3 tasks run on nm-1 only, no two
    license=1 tasks overlap on nm-0, the license held by a host's running tasks never exceeds its
    capacity, and the tasks that ask for nothing run anywhere; one handle keeps the job's task order."""
    requests = [{"license": 3}, None, "license=1", {"license": 3}, None, {"license": 1}, None, "license=1"] * 2
    capacity = [1, 4]

    async def main(cluster: LocalCluster) -> list:
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            with pytest.raises(ValueError, match=r"resources has 2 entries for 3 tasks"):
                await client.submit_job([partial(_stay, i) for i in range(3)], resources=[None, "license=1"])
            with pytest.raises(ValueError, match=r"resources\[1\] \(task 1\).*license=-2"):
                await client.submit_job([partial(_stay, i) for i in range(2)], resources=[None, {"license": -2}])
            job = await client.submit_job([partial(_stay, i) for i in range(len(requests))], resources=requests)
            return await job.results()

    with LocalCluster(node_monitors=2, slots=2, resources=["license=1", "license=4"], dashboard=False) as cluster:
        found = trio.run(main, cluster)
    node_index = {pid: i for i, pid in enumerate(cluster.node_monitor_pids)}
    assert [task for task, *_ in found] == list(range(len(requests)))
    asked = [0 if r is None else 3 if r in ({"license": 3},) else 1 for r in requests]
    for (task, node, _, _), want in zip(found, asked, strict=True):
        assert node in node_index, node
        if want == 3:
            assert node_index[node] == 1, f"task {task} (license=3) ran on nm-{node_index[node]}"
    for node, i in node_index.items():
        runs = [(start, end, want) for (_, where, start, end), want in zip(found, asked, strict=True) if where == node]
        for start, _, _ in runs:  # the license held at each start by the tasks running then
            held = sum(want for s, e, want in runs if s <= start < e)
            assert held <= capacity[i], f"nm-{i} held license={held} over its {capacity[i]}"
