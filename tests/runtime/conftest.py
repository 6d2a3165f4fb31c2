"""Fixtures shared by the runtime tests."""

from __future__ import annotations

import pytest
import trio.testing


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time for `trio.run(main, clock=autojump_clock)`: sleeps, timeouts and heartbeats
    jump ahead as soon as every task is blocked, so a test of a 30 s timeout takes no real time."""
    return trio.testing.MockClock(autojump_threshold=0)


@pytest.fixture(scope="module")
def thread_cluster():
    """A LocalCluster of 2 node monitors x 1 slot with thread executors, for the tests of one module."""
    from sparrow_runtime import LocalCluster

    with LocalCluster(node_monitors=2, slots=1, executor="thread", dashboard=False) as cluster:
        yield cluster


def count_jobs(client) -> list[int]:
    """Record the size of each job (SubmitJob) `client` sends, in a list (returned) that grows as it sends."""
    from sparrow_runtime.wire.messages import SubmitJob

    sizes = []
    send = client._send

    def counted(msgs):
        sizes.extend(len(m.tasks) for m in msgs if type(m) is SubmitJob)
        return send(msgs)

    client._send = counted
    return sizes
