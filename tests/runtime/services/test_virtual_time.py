"""Services wired over trio memory streams under MockClock: queue policies measured in slot time,
heartbeats and silent peers, all in virtual time (deterministic, no real sleeps)."""

from functools import partial

import cloudpickle
import pytest
import trio
import trio.testing

from sparrow_runtime.client.core import build_submit
from sparrow_runtime.services.config import NodeMonitorConfig, SchedulerConfig
from sparrow_runtime.services.node_monitor import NodeMonitorService
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler import SchedulerService
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.handshake import accept, connect_stream
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import Heartbeat, OutcomeToClient, Registered, RegisterNodeMonitor
from sparrow_runtime.wire.task_codec import pack_task, run_task

SECRET = b"virtual"


def _label(label, duration):
    return label, duration


class VirtualExecutor:
    """Runs a task (which returns (label, duration)), then holds the slot `duration` seconds of trio time."""

    def __init__(self):
        self.log = []  # (label, start, end)

    async def start(self, nursery):
        pass

    async def run(self, payload):
        outcome = run_task(payload)
        label, duration = cloudpickle.loads(outcome.payload)
        start = trio.current_time()
        await trio.sleep(duration)
        self.log.append((label, start, trio.current_time()))
        return outcome

    async def aclose(self):
        pass


async def _scheduler(nursery, node_timeout=2.0):
    config = SchedulerConfig(link=LinkConfig(secret=SECRET), node_timeout=node_timeout)
    scheduler = SchedulerService(SchedulerLogic(seed=5, probe_ratio=1.0), config)
    nursery.start_soon(scheduler.outcomes.run)

    async def dial(role, name):
        ours, theirs = trio.testing.memory_stream_pair()
        nursery.start_soon(scheduler.handle_stream, theirs)
        return await connect_stream(ours, link=LinkConfig(secret=SECRET), role=role, peer_id=name)

    return scheduler, dial


async def _node_monitor(nursery, dial, executor, **settings):
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, **settings))
    service = NodeMonitorService(logic, executor, nursery, link=LinkConfig(secret=SECRET), node_id="nm0")
    registered = trio.Event()
    nursery.start_soon(service.link, await dial("node-monitor", "nm0"), registered)
    await registered.wait()
    return logic


async def _client(nursery, dial):
    conn = await dial("client", "c")
    results = []
    nursery.start_soon(conn.serve, lambda msgs: results.extend(m for m in msgs if type(m) is OutcomeToClient))
    return conn, results


def _job(ref, tasks, user="", priority=0):
    msg = build_submit([pack_task(t) for t in tasks], user, priority, None, None)
    msg.ref = ref
    return msg


def test_fair_policy_at_weights_3_to_1_gives_75_25_of_slot_time(autojump_clock):
    async def main():
        async with trio.open_nursery() as nursery:
            _, dial = await _scheduler(nursery)
            executor = VirtualExecutor()
            await _node_monitor(nursery, dial, executor, policy="fair", weights={"a": 3, "b": 1})
            conn, results = await _client(nursery, dial)
            conn.send(_job(1, [partial(_label, "a", 0.010)] * 60, user="a"))
            conn.send(_job(2, [partial(_label, "b", 0.010)] * 60, user="b"))
            while len(results) < 120:
                await trio.sleep(0.1)
            # slot time while both users are backlogged: until the first of them runs out
            ends = {user: max(end for label, _, end in executor.log if label == user) for user in "ab"}
            horizon = min(ends.values())
            busy = {
                user: sum(min(e, horizon) - s for label, s, e in executor.log if label == user and s < horizon)
                for user in "ab"
            }
            share = busy["a"] / (busy["a"] + busy["b"])
            assert share == pytest.approx(0.75, abs=0.05)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_priority_policy_runs_higher_priority_first(autojump_clock):
    async def main():
        async with trio.open_nursery() as nursery:
            _, dial = await _scheduler(nursery)
            executor = VirtualExecutor()
            await _node_monitor(nursery, dial, executor, policy="priority")
            conn, results = await _client(nursery, dial)
            conn.send(_job(1, [partial(_label, "low", 0.010)] * 10, priority=5))
            await trio.sleep(0.001)  # the first low task is running when the others arrive
            conn.send(_job(2, [partial(_label, "mid", 0.010)] * 5, priority=1))
            conn.send(_job(3, [partial(_label, "high", 0.010)] * 5, priority=0))
            while len(results) < 20:
                await trio.sleep(0.1)
            order = [label for label, _, _ in executor.log]
            assert order == ["low"] + ["high"] * 5 + ["mid"] * 5 + ["low"] * 9
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_silent_node_monitor_is_dropped_and_gets_no_probes(autojump_clock):
    """A node monitor that registers but never heartbeats is dropped after node_timeout; the live one stays."""

    async def main():
        async with trio.open_nursery() as nursery:
            scheduler, dial = await _scheduler(nursery, node_timeout=2.0)
            await _node_monitor(nursery, dial, VirtualExecutor())  # heartbeats every 0.5 s
            silent = await dial("node-monitor", "mute")
            await silent.send_now([RegisterNodeMonitor("mute", 4)])
            await trio.sleep(1.0)
            assert sorted(n.node_id for n in scheduler.logic.nodes.values()) == ["mute", "nm0"]
            await trio.sleep(20.0)
            assert [n.node_id for n in scheduler.logic.nodes.values()] == ["nm0"]
            conn, results = await _client(nursery, dial)
            conn.send(_job(1, [partial(_label, "x", 0.01)] * 10))
            while len(results) < 10:
                await trio.sleep(0.1)
            assert all(r.outcome.ok for r in results)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_node_monitor_drops_a_silent_scheduler(autojump_clock):
    """The scheduler answers every heartbeat; a scheduler that stops answering is dropped after the timeout."""

    async def main():
        async with trio.open_nursery() as nursery:
            ours, theirs = trio.testing.memory_stream_pair()
            logic = NodeMonitorLogic(NodeMonitorConfig(slots=1))
            service = NodeMonitorService(
                logic,
                VirtualExecutor(),
                nursery,
                link=LinkConfig(secret=SECRET),
                node_id="nm0",
                heartbeat_interval=0.5,
                scheduler_timeout=2.0,
            )

            async def fake_scheduler():
                conn = await accept(
                    theirs,
                    link=LinkConfig(secret=SECRET),
                    role="scheduler",
                    node_id="s",
                    allowed_roles=("node-monitor",),
                )
                assert isinstance(await conn.receive_one(), RegisterNodeMonitor)
                await conn.send_now([Registered("s"), Heartbeat()])
                await trio.sleep_forever()  # never answers again

            nursery.start_soon(fake_scheduler)
            link_conn = await connect_stream(ours, link=LinkConfig(secret=SECRET), role="node-monitor", peer_id="nm0")
            start = trio.current_time()
            await service.link(link_conn)
            assert 2.0 <= trio.current_time() - start <= 2.5
            assert link_conn.closed
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)
