"""Faults of the data plane with real processes: a node monitor holding a value is SIGKILLed between its
producer and the dependent that needs it. With attempts left the client recomputes the value from its
task's call (lineage) and the dependent runs; without, the dependent fails naming the lost input."""

from __future__ import annotations

import os
import signal
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, DependencyFailed, LocalCluster, ValueLost

BIG = 300_000


def _blob(n: int) -> bytes:
    return b"x" * n


def _length(blob: bytes) -> int:
    return len(blob)


async def _produce_then_kill_holder(cluster: LocalCluster, client: Client):
    """A job of one task whose value is kept, and the id of its holder, SIGKILLed once the task is done."""
    job = await client.submit_job([partial(_blob, BIG)])
    await job.wait()
    holder = job._job.outcomes[0].ref.node_id
    os.kill(cluster.node_monitor_pids[cluster.node_ids.index(holder)], signal.SIGKILL)
    await trio.sleep(0.5)  # its links close: the scheduler drops it
    return job, holder


@pytest.mark.slow
def test_a_value_lost_with_its_node_monitor_is_recomputed_from_its_task_and_the_dependent_runs():
    """The holder dies after the producer finished: the dependent's node monitor cannot fetch the input,
    the client resubmits the producer's call, and the dependent runs on the new value; result() of the
    producer then fetches the new value too."""
    with LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster:

        async def main():
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                with trio.fail_after(60):
                    first, holder = await _produce_then_kill_holder(cluster, client)
                    second = await client.submit_job([partial(_length, first[0])])
                    assert await second.results() == [BIG]
                    assert client._logic.recomputed == 1
                    assert first._job.outcomes[0].ref.node_id != holder
                    assert await first.results() == [b"x" * BIG]

        trio.run(main)


@pytest.mark.slow
def test_without_attempts_left_the_dependent_fails_naming_the_lost_input_and_its_node_monitor():
    """retries=0 for the dependent: no recompute; it fails once with DependencyFailed naming the input
    (args[0]) and, in its ValueLost cause, the node monitor that held it; fetching the value itself then
    recomputes it."""
    with LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster:

        async def main():
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                with trio.fail_after(60):
                    first, holder = await _produce_then_kill_holder(cluster, client)
                    second = await client.submit_job([partial(_length, first[0])], retries=0)
                    outcome = (await second.outcomes())[0]
                    assert isinstance(outcome.exception, DependencyFailed) and outcome.attempts == 1
                    assert outcome.exception.path == "args[0]"
                    assert isinstance(outcome.exception.__cause__, ValueLost)
                    assert f"at node monitor {holder}" in str(outcome.exception)
                    assert client._logic.recomputed == 0
                    assert await first.results() == [b"x" * BIG]  # fetching it recomputes it
                    assert client._logic.recomputed == 1

        trio.run(main)
