"""Big but legal messages with real processes on loopback: bursts of 30-60 MB tasks and results in
both directions never look like a peer that does not read, and never fail the small tasks beside
them. Every task ends with exactly one outcome (the client refuses a second one)."""

from __future__ import annotations

import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster
from sparrow_runtime.client.core import build_submit
from sparrow_runtime.wire.task_codec import pack_task

MB = 1_000_000


def _size(data: bytes) -> int:
    return len(data)


def _bytes_at(when: float, size: int) -> bytes:
    """`size` bytes, returned at wall-clock time `when`: results that finish together."""
    time.sleep(max(when - time.time(), 0))
    return bytes(size)


@pytest.mark.slow
def test_bursts_of_big_tasks_and_results_beside_a_stream_of_small_tasks_all_succeed_once():
    """Six 30 MB jobs sent together (180 MB, over the old 128 MiB bound of the client's link), five
    40 MB results finishing together (200 MB on the node monitor's link) and one 60 MB task with a
    60 MB result, beside 60 small jobs: every task succeeds with its first attempt."""

    async def main():
        with LocalCluster(node_monitors=1, slots=5, executor="process", dashboard=False) as cluster:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                small: list = []

                async def steady() -> None:
                    for i in range(60):
                        small.append(await client.submit_job([partial(int, i)]))
                        await trio.sleep(0.02)

                with trio.fail_after(120):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(steady)
                        msgs = [build_submit([pack_task(_size, (bytes([i]) * (30 * MB),))], "", 0, None, None)
                                for i in range(6)]  # fmt: skip
                        inbound = [client.send_job(msg) for msg in msgs]  # together, with no wait between
                        del msgs
                        inbound_values = [await job.outcomes() for job in inbound]
                        when = time.time() + 3.0
                        outbound = await client.submit_job([partial(_bytes_at, when, 40 * MB)] * 5, probe_ratio=1.0)
                        outbound_values = await outbound.outcomes()
                        both = await client.submit_job([partial(bytes, b"\1" * (60 * MB))])
                        both_values = await both.outcomes()
                    small_values = [await job.outcomes() for job in small]
        assert [(o.ok, o.value, o.attempts) for (o,) in inbound_values] == [(True, 30 * MB, 1)] * 6
        assert [(o.ok, len(o.value), o.attempts) for o in outbound_values] == [(True, 40 * MB, 1)] * 5
        assert [(o.ok, len(o.value), o.attempts) for o in both_values] == [(True, 60 * MB, 1)]
        assert [(o.ok, o.value, o.attempts) for (o,) in small_values] == [(True, i, 1) for i in range(60)]

    trio.run(main)
