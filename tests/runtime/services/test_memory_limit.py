"""A process worker is held to its task's memory request (memory_limit.py): a task well over it fails once
(TOO_LARGE, not retried) with an error naming the limit, its worker is replaced and the next task runs; a
task within its request, or with none, is untouched. Both policies with real processes: the sampling
watchdog everywhere, the cgroup v2 limit where this host lets the tests create cgroups."""

from __future__ import annotations

import os
import time

import pytest
import trio

from sparrow_runtime import LocalCluster, SparrowExecutor
from sparrow_runtime.client.job import JobOptions
from sparrow_runtime.errors import TaskFailed
from sparrow_runtime.services import worker_pool
from sparrow_runtime.services.memory_limit import CgroupLimits, SampledLimits, cgroup_base
from sparrow_runtime.services.worker_pool import ProcessExecutor
from sparrow_runtime.wire.messages import TOO_LARGE
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

MIB = 2**20
REQUEST = 256 * MIB


def _hold(mib: int, seconds: float = 1.5) -> int:
    """Touch `mib` MiB (every page resident), keep them `seconds`, return the worker's pid."""
    block = b"\1" * (mib * MIB)
    time.sleep(seconds)
    return len(block) and os.getpid()


def _policies():
    base = cgroup_base()
    cgroup = pytest.param(
        lambda: CgroupLimits(base),  # type: ignore[arg-type]  # skipped when None
        id="cgroup",
        marks=pytest.mark.skipif(
            base is None, reason="no usable cgroup v2 memory controller here (not enabled, or not writable)"
        ),
    )
    return [pytest.param(SampledLimits, id="sampled"), cgroup]


async def _run(executor, mib, memory=0):
    got = []
    executor.launch(pack_task(_hold, (mib,)), got.append, memory=memory)
    with trio.fail_after(30):
        while not got:
            await trio.sleep(0.02)
    return got[0]


@pytest.mark.parametrize("policy", _policies())
def test_a_task_over_its_request_fails_naming_it_and_the_worker_is_replaced(monkeypatch, policy):
    monkeypatch.setattr(worker_pool, "memory_limits", policy)

    async def main():
        async with trio.open_nursery() as nursery:
            executor = ProcessExecutor(1)
            await executor.start(nursery)
            try:
                within = await _run(executor, 16, memory=REQUEST)
                assert within.ok, within.error
                over = await _run(executor, 768, memory=REQUEST)
                assert not over.ok and over.failure == TOO_LARGE
                assert "task exceeded its memory request of 256MiB" in over.error
                assert executor.restarts == 1  # its worker was killed and replaced
                after = await _run(executor, 768)  # asks nothing: no limit, on the replacement
                assert after.ok and unpack_outcome(after) != unpack_outcome(within)
            finally:
                await executor.aclose()
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_task_over_its_request_in_a_cluster_fails_once_and_the_node_monitor_keeps_serving(tmp_path):
    attempts = tmp_path / "attempts"

    def hog(mib):
        with open(attempts, "a") as f:
            f.write("x")
        return _hold(mib)

    with (
        LocalCluster(node_monitors=1, slots=2, resources={"memory": "2GiB"}, dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        asks = JobOptions(resources={"memory": "256MiB"})
        (over,) = ex.submit_many([(hog, (768,), {})], asks)
        with pytest.raises(TaskFailed, match="task exceeded its memory request of 256MiB"):
            over.result(timeout=60)
        assert attempts.read_text() == "x"  # one outcome: not retried as a lost worker
        (within,) = ex.submit_many([(_hold, (16,), {})], asks)
        plain = ex.submit(_hold, 512)
        assert within.result(timeout=60) and plain.result(timeout=60)


def test_the_cgroup_policy_sets_the_limit_and_reads_an_oom_kill_as_the_request_exceeded(tmp_path):
    """The files CgroupLimits writes and reads, on a plain directory standing in for the cgroup tree (the
    kernel's side is the cgroup test above, where this host allows it)."""
    limits = CgroupLimits(tmp_path)
    for pid, events, reason in (
        (11, "oom 1\noom_kill 1\n", "task exceeded its memory request of 256MiB"),
        (12, "oom_kill 0\n", None),
    ):
        limits.hold(pid, REQUEST, lambda why: None)
        group = tmp_path / f"sparrow-worker-{pid}"
        assert [
            (group / name).read_text() for name in ("memory.max", "memory.swap.max", "memory.oom.group", "cgroup.procs")
        ] == [str(REQUEST), "0", "1", str(pid)]
        (group / "memory.events").write_text(f"low 0\nhigh 0\nmax 4\n{events}")
        assert limits.release(pid) == reason
        assert (group / "memory.max").read_text() == "max"  # the worker's next task is not held to it
        assert limits.release(pid) is None  # released once
