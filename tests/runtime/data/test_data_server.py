"""A node monitor's data listener against peers that misbehave: each gets a clear error or is dropped,
alone, and the listener goes on serving everyone else."""

from __future__ import annotations

from functools import partial

import trio

from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.data.server import DataServer
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import Error, FetchValue, GetTask, ValueMissing, ValueRef

SECRET = b"d" * 32


async def _serving(test, **options) -> DataServer:
    store = ValueStore(1 << 30)
    server = DataServer(store, link=LinkConfig(secret=SECRET), node_id="nm", **options)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle_stream, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(20):
            await test(server, store, ("127.0.0.1", port))
        nursery.cancel_scope.cancel()
    return server


def _ref(address, key: bytes, size: int) -> ValueRef:
    return ValueRef("nm", f"{address[0]}:{address[1]}", key, size)


def test_a_message_not_allowed_on_a_data_link_gets_error_and_only_that_link_closes():
    """GetTask on a data link: Error naming it, that link closed; a fetch on another link still works,
    and asking for an unknown key gets ValueMissing with the link kept."""

    async def test(server, store, address):
        key = store.put(b"v" * 1000)
        bad = await connect(address, link=LinkConfig(secret=SECRET), role="client", peer_id="bad")
        await bad.send_now([FetchValue(b"\0" * 16)])
        assert type(await bad.receive_one()) is ValueMissing
        await bad.send_now([GetTask(1)])
        reply = await bad.receive_one()
        assert type(reply) is Error and "GetTask is not allowed on a data link" in reply.reason
        await bad.aclose()
        links = DataLinks(link=LinkConfig(secret=SECRET), role="client", peer_id="good")
        assert await links.fetch(_ref(address, key, 1000)) == b"v" * 1000
        await links.aclose()
        assert server.stats["protocol_errors"] == 1 and server.stats["missing"] == 1

    trio.run(_serving, test)


def test_a_fetcher_that_stops_reading_halfway_is_dropped_and_others_are_served_meanwhile():
    """A peer asks for 64 MB and reads nothing: once no chunk moves for stall_timeout it is dropped;
    another peer's fetch of the same value completes. The timeout is 2 s, not less: under load 8-12 on 2 cores
    the good fetch's 64 MB once went 0.5 s without a chunk moving and was dropped too."""

    async def test(server, store, address):
        size = 64 * 1024 * 1024
        key = store.put(bytes(size))
        stalled = await connect(address, link=LinkConfig(secret=SECRET), role="client", peer_id="stalled")
        await stalled.send_now([FetchValue(key)])
        links = DataLinks(link=LinkConfig(secret=SECRET), role="client", peer_id="good")
        assert len(await links.fetch(_ref(address, key, size))) == size
        await links.aclose()
        while not server.stats["stalled"]:
            await trio.sleep(0.05)
        await stalled.aclose()
        assert server.stats["served"] == 1

    trio.run(partial(_serving, test, stall_timeout=2.0))
