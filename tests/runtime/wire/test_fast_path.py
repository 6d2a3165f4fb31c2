"""The per-message fast paths: direct socket writes (connection.py), grouped sends, executor launches."""

import os
import threading
from functools import partial

import pytest
import trio

from sparrow_runtime.services.worker_pool import ProcessExecutor, ThreadExecutor
from sparrow_runtime.wire.connection import Connection, send_grouped
from sparrow_runtime.wire.messages import GetTask, TaskToNode
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome


def _socket_connections() -> tuple[Connection, Connection]:
    left, right = trio.socket.socketpair()
    return Connection(trio.SocketStream(left), handshake=False), Connection(trio.SocketStream(right), handshake=False)


def test_direct_writes_keep_order_behind_a_write_that_did_not_fit():
    """A burst too big for the socket buffer is finished by the sender task; bursts sent meanwhile
    queue behind it and arrive after it, in order, with no byte interleaved."""

    async def main():
        await order_behind_a_big_write(*_socket_connections())

    trio.run(main)


async def order_behind_a_big_write(sender: Connection, receiver: Connection) -> None:
    """The check of the test above, over any pair of connected Connections (on TLS: test_tls_channel)."""
    big = TaskToNode(1, 0, os.urandom(4 * 1024 * 1024))
    sender.send(big)
    assert sender._unsent  # the direct write could not take it all: the test relies on that
    sender.send_many([GetTask(2), GetTask(3)])
    sender.send(GetTask(4))
    got = []

    def on_messages(msgs):
        got.extend(msgs)
        if len(got) == 4:
            receiver.close_soon()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.serve, lambda msgs: None)
        with trio.fail_after(20):
            await receiver.serve(on_messages)
        sender.close_soon()
    assert got == [big, GetTask(2), GetTask(3), GetTask(4)]


class _Peer:
    def __init__(self, role, log):
        self.peer_role = role
        self._log = log

    def send(self, msg):
        self._log.append((self.peer_role, [msg]))

    def send_many(self, msgs):
        self._log.append((self.peer_role, list(msgs)))


def test_send_grouped_writes_one_burst_per_peer_node_monitors_first():
    log = []
    client, node_a, node_b = _Peer("client", log), _Peer("node-monitor", log), _Peer("node-monitor", log)
    send_grouped([(client, "r1"), (node_a, "a1"), (client, "r2"), (node_b, "b1"), (node_a, "a2")])
    assert log == [("node-monitor", ["a1", "a2"]), ("node-monitor", ["b1"]), ("client", ["r1", "r2"])]


def _where(i):
    return i, os.getpid(), threading.get_ident()


@pytest.mark.parametrize("kind", ["process", "thread"])
def test_launch_runs_more_tasks_than_slots_on_the_executor_and_reports_each_once(kind):
    """Launches beyond the slots wait for a free worker; every task runs on a worker (not in the trio
    thread) and its `done` is called exactly once, with its own outcome."""

    async def main():
        outcomes = {}
        finished = trio.Event()

        def done(i, outcome):
            assert i not in outcomes
            outcomes[i] = unpack_outcome(outcome)
            if len(outcomes) == 7:
                finished.set()

        async with trio.open_nursery() as nursery:
            executor = ProcessExecutor(2) if kind == "process" else ThreadExecutor(2)
            await executor.start(nursery)
            try:
                for i in range(7):
                    executor.launch(pack_task(_where, (i,)), partial(done, i))
                with trio.fail_after(30):
                    await finished.wait()
            finally:
                await executor.aclose()
                nursery.cancel_scope.cancel()
        assert sorted(outcomes) == list(range(7))
        assert all(index == i for i, (index, _, _) in outcomes.items())
        if kind == "process":
            assert all(pid != os.getpid() for _, pid, _ in outcomes.values())
            assert len({pid for _, pid, _ in outcomes.values()}) == 2
        else:
            assert all(thread != threading.get_ident() for _, _, thread in outcomes.values())

    trio.run(main)
