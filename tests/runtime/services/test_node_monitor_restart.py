"""A node monitor killed and started again at once under its id while one of its two schedulers is frozen
(SIGSTOP) registers with both once that scheduler is back, in every round: on waking, the scheduler forgets
the dead link before any checkpoint (so the new registration cannot find it live), a link not heard from since
the scheduler's own pause does not count as live, and a refused node monitor tries again for a while before it
stops. Real processes, on TLS."""

from __future__ import annotations

import logging
import os
import signal
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import LinkConfig, LocalCluster, NodeMonitorConfig, serve_node_monitor, serve_scheduler
from sparrow_runtime.services.node_monitor import REFUSED_PATIENCE
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.certs import local_certs

from ...node_monitor_process import await_ready, kill, spawn_node_monitor, stop
from ..until import until
from .test_services import SCHEDULER, SECRET

ROUNDS = 10  # the old rule failed 7 rounds of 25: 10 rounds pass by chance with p < 0.04
FROZEN = 2.0  # seconds the scheduler stays frozen: the new process has started and dialed it by then


@pytest.mark.slow
def test_a_node_monitor_restarted_while_a_scheduler_is_frozen_registers_with_every_scheduler(tmp_path):
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"),
        schedulers=2,
        node_monitors=1,
        tls=tmp_path / "tls",
        dashboard=False,
    ) as cl:
        files = local_certs(tmp_path / "tls", "unused")["node-monitor"]  # the cluster's (remade only if unusable)
        frozen = cl.pids[1]  # the second scheduler
        current = None
        try:
            for round_ in range(ROUNDS):
                os.kill(frozen, signal.SIGSTOP)
                try:
                    if current is None:
                        kill(cl.node_monitor_pids[0])
                    else:
                        stop(current)
                    current = spawn_node_monitor(cl.schedulers, files, cl.node_ids[0])
                    time.sleep(FROZEN)
                finally:
                    os.kill(frozen, signal.SIGCONT)
                await_ready(current, f"{cl.node_ids[0]} (round {round_})", timeout=30)
        finally:
            if current is not None:
                stop(current)


def test_the_scheduler_forgets_an_ended_link_before_it_closes_it():
    """When a node monitor's link ends, the scheduler's logic has forgotten it before the link's closing (the
    sender's flush and close, then the shell's), which waits: a registration handled meanwhile cannot find the
    dead link live."""

    async def main():
        logic = SchedulerLogic(seed=1)
        async with trio.open_nursery() as nursery:
            address = await nursery.start(partial(serve_scheduler, SCHEDULER, logic=logic))
            async with trio.open_nursery() as node:
                node.start_soon(_node_monitor, address, "box")
                await until(lambda: logic.nodes, 10)
                (conn,) = logic.nodes
                registered_at_close = []
                close = conn.aclose

                async def checked_close():
                    registered_at_close.append(conn in logic.nodes)
                    await close()

                conn.aclose = checked_close
                node.cancel_scope.cancel()
            await until(lambda: registered_at_close, 10)
            assert registered_at_close and not any(registered_at_close)  # the sender's close, then the shell's
            nursery.cancel_scope.cancel()

    trio.run(main)


async def _node_monitor(address, node_id, task_status=trio.TASK_STATUS_IGNORED):
    await serve_node_monitor(
        NodeMonitorConfig(link=LinkConfig(secret=SECRET), schedulers=[address], node_id=node_id, executor="thread"),
        task_status=task_status,
    )


def test_a_refused_node_monitor_tries_again_and_registers_once_its_id_is_free(caplog):
    """A second node monitor under a live id is refused, logs that it tries again, and registers as soon as
    the first one's link ends (within REFUSED_PATIENCE), instead of exiting at the first refusal."""

    async def main():
        logic = SchedulerLogic(seed=1)
        async with trio.open_nursery() as nursery:
            address = await nursery.start(partial(serve_scheduler, SCHEDULER, logic=logic))
            async with trio.open_nursery() as first:
                first.start_soon(_node_monitor, address, "box")
                await until(lambda: logic.nodes, 10)
                (first_conn,) = logic.nodes
                second = trio.Event()

                async def run_second():
                    await nursery.start(_node_monitor, address, "box")
                    second.set()

                nursery.start_soon(run_second)
                await until(lambda: logic.stats["registrations_refused"] >= 1, 10)
                first.cancel_scope.cancel()
            with trio.fail_after(REFUSED_PATIENCE):
                await second.wait()
            assert [n.node_id for n in logic.nodes.values()] == ["box"] and first_conn not in logic.nodes
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, "sparrow_runtime"):
        trio.run(main)
    assert any("already registered" in r.getMessage() and "trying again" in r.getMessage() for r in caplog.records)
