"""Values passed as their memory files on one host (FetchFile -> ValueFile + the descriptor, on a plain Unix
data link): the fetcher gets the holder's sealed file itself, nothing is copied through the socket, and it
cannot change the holder's value; values not in a memory file, and links over TCP, still go in chunks."""

from __future__ import annotations

import os
import tempfile
from functools import partial

import pytest
import trio

from sparrow_runtime.data import shared
from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.data.server import DataServer
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.data.upload import put_value
from sparrow_runtime.services.listen import open_listeners
from sparrow_runtime.wire.address import parse_address
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import FetchFile, ValueMissing, ValueRef

SECRET = b"f" * 32
needs_memfd = pytest.mark.skipif(not shared.AVAILABLE, reason="memory files are Linux only")


async def _serving(test, unix: bool = True, **options) -> DataServer:
    """Run `test(server, store, address)` against a DataServer on a Unix socket (or loopback TCP)."""
    store = ValueStore(1 << 30)
    server = DataServer(store, link=LinkConfig(secret=SECRET), node_id="nm", **options)
    with tempfile.TemporaryDirectory() as folder:
        host, port = ("unix:" + os.path.join(folder, "nm.data"), 0) if unix else ("127.0.0.1", 0)
        listeners = await open_listeners(host, port)
        name = listeners[0].socket.getsockname()
        address = host if unix else f"127.0.0.1:{name[1]}"
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, server.handle_stream, listeners)
            with trio.fail_after(20):
                await test(server, store, address)
            nursery.cancel_scope.cancel()
    return server


def _links(**options) -> DataLinks:
    return DataLinks(
        link=LinkConfig(secret=SECRET), role="node-monitor", peer_id="fetcher", shared_over=1000, **options
    )


@needs_memfd
def test_a_memory_file_value_on_a_unix_link_comes_as_the_holders_own_file_which_the_fetcher_cannot_change():
    """A 3 MB value kept in a sealed memory file, fetched on a Unix link: the same inode as the holder's (no bytes
    served), its contents whole, and a write through the passed descriptor fails (sealed)."""

    async def test(server, store, address):
        data = os.urandom(3_000_000)
        kept = shared.share(data)
        key = store.put(kept)
        links = _links()
        value = await links.fetch(ValueRef("nm", address, key, len(data)))
        assert type(value) is shared.SharedValue and bytes(value) == data
        assert os.fstat(value.fd).st_ino == os.fstat(kept.fd).st_ino
        assert server.stats["served_files"] == 1 and server.stats["served"] == 0 and links.fetched_files == 1
        with pytest.raises(PermissionError):
            os.pwrite(value.fd, b"changed", 0)
        assert bytes(kept[:7]) == data[:7]
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_a_value_not_in_a_memory_file_or_a_tcp_link_goes_in_chunks_as_before():
    """On a Unix link a value held as bytes is sent in chunks (FetchFile answered as FetchValue); over TCP a
    memory-file value is too: no descriptor is passed either way."""

    async def on_unix(server, store, address):
        key = store.put(b"b" * 300_000)
        links = _links()
        value = await links.fetch(ValueRef("nm", address, key, 300_000))
        assert bytes(value) == b"b" * 300_000
        assert server.stats["served"] == 1 and server.stats["served_files"] == 0 and links.fetched_files == 0
        await links.aclose()

    async def on_tcp(server, store, address):
        key = store.put(shared.share(b"t" * 300_000))
        links = _links()
        value = await links.fetch(ValueRef("nm", address, key, 300_000))
        assert type(value) is shared.SharedValue and bytes(value) == b"t" * 300_000
        assert server.stats["served"] == 1 and server.stats["served_files"] == 0 and links.fetched_files == 0
        await links.aclose()

    trio.run(_serving, on_unix)
    trio.run(partial(_serving, on_tcp, unix=False))


@needs_memfd
def test_fetch_file_for_an_unknown_or_released_key_gets_value_missing_and_the_link_stays():
    """FetchFile of a key never kept, then of a released one: ValueMissing each time on the same link, no
    descriptor; a fetch of a kept value on it then gets its file."""

    async def test(server, store, address):
        key = store.put(shared.share(b"r" * 2_000_000))
        gone = store.put(shared.share(b"g" * 2_000_000))
        store.release([gone])
        conn = await connect(
            parse_address(address), link=LinkConfig(secret=SECRET), role="node-monitor", peer_id="asker"
        )
        for asked in (b"\0" * 16, gone):
            await conn.send_now([FetchFile(asked)])
            assert type(await conn.receive_one()) is ValueMissing
        await conn.aclose()
        links = _links()
        assert bytes(await links.fetch(ValueRef("nm", address, key, 2_000_000))) == b"r" * 2_000_000
        assert server.stats["missing"] == 2 and server.stats["served_files"] == 1
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_a_passed_file_becomes_a_copy_that_later_fetches_take():
    """Two fetches of one value on a Unix link with copies on: the holder passes its file once."""

    async def test(server, store, address):
        key = store.put(shared.share(b"c" * 2_000_000))
        links = _links(copies=1 << 30)
        ref = ValueRef("nm", address, key, 2_000_000)
        first = await links.fetch(ref)
        assert await links.fetch(ref) is first
        assert server.stats["served_files"] == 1 and links.copies is not None and links.copies.hits == 1
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_an_upload_over_the_share_limit_is_kept_in_a_memory_file_that_a_peer_then_takes_as_the_file():
    """A listener whose workers take memory files (shared_over=1 MiB): a 2 MB upload is kept in one, and a
    node monitor's fetch on a Unix link gets that file; a 500 kB upload stays bytes."""

    async def test(server, store, address):
        conn = await connect(parse_address(address), link=LinkConfig(secret=SECRET), role="client", peer_id="uploader")
        big, small = os.urandom(2_000_000), os.urandom(500_000)
        keys = [await put_value(conn, value, name="nm") for value in (big, small)]
        await conn.aclose()
        assert type(store.get(keys[0]).value) is shared.SharedValue
        assert type(store.get(keys[1]).value) is not shared.SharedValue
        links = _links()
        assert bytes(await links.fetch(ValueRef("nm", address, keys[0], len(big)))) == big
        assert server.stats["served_files"] == 1
        await links.aclose()

    trio.run(partial(_serving, test, shared_over=1 << 20))
