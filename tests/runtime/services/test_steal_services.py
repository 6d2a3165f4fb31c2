"""Work stealing between node monitors as trio services in one nursery, over real loopback TCP: reservations
queued behind a long task move to idle peers and every task ends once; a peer that accepts the steal link
and never answers does not hold the thief up; a steal setting that is not a bool is refused."""

import time
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    Constraint,
    LinkConfig,
    LocalCluster,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.handshake import HandshakeGate, accept
from sparrow_runtime.wire.messages import StealPeers

SECRET = "test-secret"


async def start_cluster(nursery, n_nodes, **node_options):
    scheduler = SchedulerLogic(seed=5, probe_ratio=1.0)
    address = await nursery.start(
        partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret=SECRET)), logic=scheduler)
    )
    nodes = []
    for i in range(n_nodes):
        logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, steal=True), seed=i)
        nodes.append(logic)
        await nursery.start(
            partial(
                serve_node_monitor,
                NodeMonitorConfig(
                    link=LinkConfig(secret=SECRET), schedulers=[address], node_id=f"nm{i}", executor="thread"
                ),
                logic=logic,
            )
        )
    return address, scheduler, nodes


def test_reservations_queued_behind_a_long_task_are_stolen_and_every_task_ends_once():
    """nm0 runs a 1.5 s task (constrained there); 24 one-task jobs of 20 ms, one probe each: those queued at nm0
    move to the idle peers, so every job ends long before the long task does, each task with one outcome."""

    async def main():
        async with trio.open_nursery() as nursery:
            address, scheduler, nodes = await start_cluster(nursery, 3)
            async with Client([address], secret=SECRET) as client:
                long_job = await client.submit_job([partial(time.sleep, 1.5)], constraints=Constraint(("nm0",)))
                await trio.sleep(0.2)  # it runs at nm0
                started = trio.current_time()
                jobs = [await client.submit_job([partial(time.sleep, 0.02)]) for _ in range(24)]
                for job in jobs:
                    outcomes = await job.outcomes()
                    assert [o.ok for o in outcomes] == [True]
                short_done = trio.current_time() - started
                assert [o.ok for o in await long_job.outcomes()] == [True]
            assert short_done < 1.2, f"the short jobs took {short_done:.2f} s: they waited behind the long task"
            assert nodes[0].stats["lent"] >= 1 and scheduler.stats["get_task_stolen"] >= 1
            assert scheduler.stats["outcomes"] == 25 and not scheduler.jobs
            # the thieves timed their steals (sparrow_experiments.steal_timing reads these): every round trip took time
            thieves = [n.stats for n in nodes[1:] if n.stats["steal_take_rounds"]]
            assert thieves and all(s["steal_probe_rounds"] >= s["steal_take_rounds"] for s in thieves)
            assert all(s["steal_probe_us"] > 0 and s["steal_take_us"] > 0 for s in thieves)
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_peer_that_never_answers_a_steal_request_does_not_block_the_thief():
    """The thief's only peer takes the steal link's handshake and then says nothing: each attempt gives up after
    steal_timeout, the link is closed, and the thief still runs its own tasks at once."""

    async def main():
        async with trio.open_nursery() as nursery:
            silent_links = []

            async def silent_peer(stream):
                conn = await accept(
                    stream,
                    link=LinkConfig(secret=SECRET.encode()),
                    role="node-monitor",
                    node_id="silent",
                    allowed_roles=("node-monitor",),
                    gate=HandshakeGate(),
                )
                silent_links.append(conn)
                await trio.sleep_forever()

            listeners = await nursery.start(partial(trio.serve_tcp, silent_peer, 0, host="127.0.0.1"))
            silent = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
            scheduler = SchedulerLogic(seed=5)
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret=SECRET)), logic=scheduler)
            )
            thief = NodeMonitorLogic(NodeMonitorConfig(slots=1, steal=True), seed=1)
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(
                        link=LinkConfig(secret=SECRET),
                        schedulers=[address],
                        node_id="t",
                        executor="thread",
                        steal_timeout=0.2,
                    ),
                    logic=thief,
                )
            )
            [conn] = [n.peer for n in scheduler.nodes.values()]
            conn.send(StealPeers([silent]))  # as if the scheduler knew the silent peer
            with trio.fail_after(5):
                while thief.stats["steal_timeouts"] < 1:
                    await trio.sleep(0.05)
            async with Client([address], secret=SECRET) as client:
                with trio.fail_after(3):
                    job = await client.submit_job([partial(pow, 2, 5)])
                    assert [o.value for o in await job.outcomes()] == [32]
            assert silent_links and thief.stats["steal_attempts"] >= 2
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_steal_setting_that_is_not_a_bool_is_refused_by_name():
    """steal="yes" to the node monitor's logic and to LocalCluster: a ValueError naming the setting, before
    anything starts."""
    with pytest.raises(ValueError, match="steal must be a bool, got 'yes'"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, steal="yes"))
    with pytest.raises(ValueError, match="steal must be a bool, got 'yes'"):
        LocalCluster(node_monitor=NodeMonitorConfig(steal="yes"))
