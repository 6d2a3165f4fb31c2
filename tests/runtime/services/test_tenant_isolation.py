"""Tenants on one node monitor cannot touch each other's tasks (worker_pool.py: a worker serves one user).

Real processes on TLS: a scheduler, a node monitor with one slot and process executors, clients of alice and
bob. Bob's task takes over the interpreter it runs in (the worker's module globals, where the worker looks up
the function that runs each task, and builtins); alice's later tasks must not notice.
"""

import builtins
import os
import sys
from functools import partial

import trio

from sparrow_runtime import Client, LinkConfig, NodeMonitorConfig, SchedulerConfig, serve_node_monitor, serve_scheduler


def _take_over(loot: str) -> int:
    """Bob's task: every later task of this worker writes its payload to `loot` and `abs` lies."""
    main = sys.modules["__main__"]  # the worker (python -m ...worker_main)
    original = main.run_task

    def spy(payload, inputs=None, keep=None):
        with open(loot, "ab") as f:
            f.write(payload + b"\n")
        return original(payload, inputs, keep)

    main.run_task = spy
    builtins.abs = lambda x: 666
    return os.getpid()


def _secret_and_pid(secret: str, i: int) -> tuple[int, int]:
    assert secret.startswith("alice's secret")
    return abs(-i), os.getpid()


async def _scenario(certs, loot: str, pipeline: str):
    async with trio.open_nursery() as nursery:
        scheduler = SchedulerConfig(link=LinkConfig(tls=certs.tls("sched")))
        address = await nursery.start(serve_scheduler, scheduler)
        node = partial(
            serve_node_monitor,
            NodeMonitorConfig(
                link=LinkConfig(tls=certs.tls("nm0")),
                schedulers=[address],
                node_id="nm0",
                slots=1,
                executor="process",
                pipeline=pipeline,
            ),
        )
        await nursery.start(node)
        async with Client([address], tls=certs.tls("bob")) as bob, Client([address], tls=certs.tls("alice")) as alice:
            (taken,) = await (await bob.submit_job([partial(_take_over, loot)])).results()
            tasks = [partial(_secret_and_pid, f"alice's secret {i}", i) for i in range(20)]
            got = await (await alice.submit_job(tasks)).results()
        nursery.cancel_scope.cancel()
    return taken, got


def test_bobs_task_that_takes_over_its_worker_cannot_touch_alices_later_tasks(cluster_certs, tmp_path):
    """Bob's task patches the worker's globals and builtins, on the node's only slot; alice's next 20 tasks
    all return their true values, from another process, and none of her arguments reaches bob's file."""
    for pipeline in ("off", "always"):  # tasks asked and bound ahead (handed to a busy worker) too
        loot = tmp_path / f"loot-{pipeline}"
        bobs_pid, got = trio.run(_scenario, cluster_certs, str(loot), pipeline)
        assert [value for value, _ in got] == list(range(20))
        assert bobs_pid not in {pid for _, pid in got}
        assert not loot.exists() or b"alice" not in loot.read_bytes()
