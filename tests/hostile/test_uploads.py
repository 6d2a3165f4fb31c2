"""Uploads (Client.scatter's PutValue) against hostile clients of a node monitor's data listener: a huge size,
chunks out of order or past the last, a stall halfway, a value over the memory limit, a node monitor posing
as a client, another user reading or releasing a scattered value. Each gets a clear error or is dropped,
alone: the reservation goes back, and the listener goes on serving everyone else."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from sparrow_runtime import UploadFailed
from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.data.upload import put_value
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.limits import MAX_VALUE_SIZE
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import Error, PutValue, ValueChunk, ValueHeader, ValueKept, ValueRef

from ..runtime.data.test_data_server import SECRET, _serving


async def _link(address, role: str = "client", peer_id: str = "c1"):
    return await connect(address, link=LinkConfig(secret=SECRET), role=role, peer_id=peer_id)


async def _honest_upload_works(address, store: ValueStore) -> None:
    """After a bad peer: another client uploads 3 MB and fetches it back."""
    conn = await _link(address, peer_id="good")
    value = bytes(range(256)) * 12_000
    key = await put_value(conn, value, name="nm")
    await conn.aclose()
    links = DataLinks(link=LinkConfig(secret=SECRET), role="client", peer_id="good")
    ref = ValueRef("nm", f"{address[0]}:{address[1]}", key, len(value))
    assert await links.fetch(ref) == value
    await links.aclose()


async def _refused(conn, msgs: list, match: str) -> None:
    """`msgs` sent on `conn` are answered by an Error matching `match`, and the link is closed."""
    await conn.send_now(msgs)
    with trio.fail_after(5):
        while True:
            reply = await conn.receive_one()
            if type(reply) not in (ValueHeader, ValueKept):
                break
    assert type(reply) is Error and match in reply.reason, reply
    with trio.fail_after(5):
        while True:
            try:
                await conn.receive_one()
            except Exception:
                break
    await conn.aclose()


def test_an_upload_of_a_huge_size_is_refused_at_once_and_nothing_is_reserved():
    """PutValue(2**40) to a node monitor of max_value 1 MB: Error naming both sizes before any buffer is made;
    a size past what the protocol allows at all is a protocol error; others go on uploading."""

    async def test(server, store, address):
        conn = await _link(address)
        await _refused(conn, [PutValue(MAX_VALUE_SIZE)], "over its max_value of 10,000,000 bytes")
        assert store.held == 0 and server.stats["uploads_refused"] == 1
        raw = await _link(address)
        await raw.send_now([PutValue(0)])  # the size field itself is checked by the decoder
        assert type(await raw.receive_one()) is ValueHeader
        await raw.aclose()
        await _honest_upload_works(address, store)

    trio.run(partial(_serving, test, max_value=10_000_000))


@pytest.mark.parametrize(
    ("chunks", "match"),
    [
        ([ValueChunk(1, b"x" * 10)], "chunk 1 of 10 bytes, expected chunk 0"),
        ([ValueChunk(0, b"x" * 99)], "chunk 0 of 99 bytes, expected chunk 0 of 10 bytes"),
        ([ValueChunk(0, b"x" * 10), ValueChunk(0, b"x" * 10)], "ValueChunk is not allowed on a data link"),
    ],
    ids=["out of order", "wrong length", "past the last"],
)
def test_chunks_that_break_an_upload_get_error_the_link_closes_and_the_room_comes_back(chunks, match):
    """A chunk out of order, of the wrong length, or after the last: Error naming it, that link closed, the
    store's reservation given back (nothing of it kept but a complete value); others go on uploading."""

    async def test(server, store, address):
        conn = await _link(address)
        await conn.send_now([PutValue(10)])
        assert type(await conn.receive_one()) is ValueHeader
        await _refused(conn, chunks, match)
        await trio.sleep(0.05)
        assert store.held == (10 if len(chunks) == 2 else 0)  # the complete one is kept (and released with its session)
        assert server.stats["protocol_errors"] == 1
        await _honest_upload_works(address, store)

    trio.run(_serving, test)


def test_an_upload_that_stalls_halfway_is_dropped_and_its_reservation_goes_back():
    """A client sends one chunk of three and then nothing: after stall_timeout its link is dropped (not the
    60 s idle timeout), the reservation goes back; meanwhile another client's upload completes."""

    async def test(server, store, address):
        conn = await _link(address)
        await conn.send_now([PutValue(3 * 10)])
        header = await conn.receive_one()
        assert type(header) is ValueHeader
        await conn.send_now([ValueChunk(0, b"x" * header.chunk)] if header.chunk < 30 else [])
        assert store.held == 30
        await _honest_upload_works(address, store)
        with trio.fail_after(5):
            while store.held > len(bytes(range(256)) * 12_000):
                await trio.sleep(0.05)
        assert server.stats["uploads_stalled"] == 1
        await conn.aclose()

    trio.run(partial(_serving, test, stall_timeout=0.5))


def test_a_value_over_the_memory_limit_is_refused_naming_the_sizes():
    """A store of 1 MB holding 600 kB: an upload of 500 kB is refused with the store's sizes; UploadFailed on
    the client's side names the node monitor; the store still holds exactly what it did."""

    async def test(server, store, address):
        store.limit = 1_000_000
        store.put(b"h" * 600_000)
        conn = await _link(address)
        with pytest.raises(UploadFailed, match=r"node monitor nm refused the upload of 500,000 bytes: .*600,000 of"):
            await put_value(conn, b"v" * 500_000, name="nm")
        await conn.aclose()
        assert store.held == 600_000 and len(store) == 1
        conn = await _link(address)
        await put_value(conn, b"v" * 300_000, name="nm")  # what fits still goes
        await conn.aclose()
        assert store.held == 900_000

    trio.run(_serving, test)


def test_a_node_monitor_may_not_upload():
    """PutValue from a node monitor's link (uploads are clients'): Error, link closed, nothing reserved."""

    async def test(server, store, address):
        conn = await _link(address, role="node-monitor", peer_id="nm9")
        await _refused(conn, [PutValue(10)], "PutValue is not allowed on a data link from a node-monitor")
        assert store.held == 0

    trio.run(_serving, test)
