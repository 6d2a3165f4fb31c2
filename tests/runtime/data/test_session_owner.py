"""A value's session belongs to the user who made it: another user's client claiming the same client id at
another scheduler cannot release it (scheduler_logic.py's sessions, store.py's release_session).

Real services on TLS in this process: two schedulers, one node monitor registered with both. Alice's client
(id "shared-id") at the first makes a value that stays at the node monitor; bob's client claims "shared-id"
at the second and goes; once the second scheduler's client grace is over it sends ReleaseSession. Alice's
dependent task then takes her value as it is: nothing of hers was dropped and her producer ran once.
"""

from __future__ import annotations

from functools import partial

import trio

from sparrow_runtime import Client, LinkConfig, NodeMonitorConfig, SchedulerConfig, serve_node_monitor, serve_scheduler
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from tests.runtime.until import until

BIG = 200_000  # over the default inline limit: kept at the node monitor


def _produce(runs: str) -> bytes:
    with open(runs, "a") as f:
        f.write("ran\n")
    return b"x" * BIG


def _length(value: bytes) -> int:
    return len(value)


async def _scenario(certs, runs: str) -> tuple[int, int]:
    async with trio.open_nursery() as nursery:
        schedulers = [SchedulerLogic(seed=i, client_grace=0.2) for i in (1, 2)]
        addresses = [
            await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(tls=certs.tls("sched"))), logic=logic)
            )
            for logic in schedulers
        ]
        node = NodeMonitorLogic(NodeMonitorConfig(slots=1))
        await nursery.start(
            partial(
                serve_node_monitor,
                NodeMonitorConfig(
                    link=LinkConfig(tls=certs.tls("nm0")), schedulers=addresses, node_id="nm0", executor="thread"
                ),
                logic=node,
            )
        )
        with trio.fail_after(30):
            async with Client([addresses[0]], tls=certs.tls("alice"), client_id="shared-id") as alice:
                made = await alice.submit_job([partial(_produce, runs)])
                await made.wait()
                assert len(node.store) == 1
                async with Client([addresses[1]], tls=certs.tls("bob"), client_id="shared-id") as bob:
                    assert await (await bob.submit_job([partial(_length, b"bob's")])).results() == [5]
                await until(lambda: schedulers[1].stats["sessions_released"] == 1)
                async with Client([addresses[1]], tls=certs.tls("bob")) as bob_again:  # after it, on the same link
                    assert await (await bob_again.submit_job([partial(_length, b"")])).results() == [0]
                (length,) = await (await alice.submit_job([partial(_length, made[0])])).results()
                recomputed = alice._logic.recomputed
        nursery.cancel_scope.cancel()
    return length, recomputed


def test_bob_claiming_alices_client_id_at_another_scheduler_drops_none_of_her_values(cluster_certs, tmp_path):
    runs = tmp_path / "runs"
    length, recomputed = trio.run(_scenario, cluster_certs, str(runs))
    assert (length, recomputed, runs.read_text().splitlines()) == (BIG, 0, ["ran"])
