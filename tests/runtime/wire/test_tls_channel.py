"""TLS as the connections run it (tls_channel.py under connection.py): the direct-write fast path on
ciphertext, with trio's semantics kept: order behind a write that did not fit, a peer that stops
reading dropped, a changed byte a one-line TLS loss, records cut anywhere reassembled, and the bytes
that came with the handshake's last read not lost."""

from __future__ import annotations

import socket
import ssl
from functools import partial

import pytest
import trio
import trio.testing

from sparrow_runtime.errors import ConnectionLost
from sparrow_runtime.wire.certs import local_certs
from sparrow_runtime.wire.connection import Connection
from sparrow_runtime.wire.framing import encode_frames
from sparrow_runtime.wire.messages import GetTask, Heartbeat, TaskToWorker
from sparrow_runtime.wire.tls import TLS, start_tls
from sparrow_runtime.wire.tls_channel import TLSChannel

from .test_fast_path import order_behind_a_big_write

MB = 1 << 20


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory) -> tuple[TLS, TLS]:
    files = local_certs(tmp_path_factory.mktemp("tls"), "tester")
    return TLS(*files["scheduler"]), TLS(*files["client"])


async def _tls_connections(tls_pair, *, small_buffers: bool = False, **options) -> tuple[Connection, Connection]:
    """Two Connections on TLS over a socket pair, handshakes done (the second is the client side)."""
    left, right = socket.socketpair()
    if small_buffers:
        for sock in (left, right):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    streams = [trio.SocketStream(trio.socket.from_stdlib_socket(s)) for s in (left, right)]
    channels: list = [None, None]

    async def side(i: int) -> None:
        channels[i] = await start_tls(streams[i], tls_pair[i], server_side=i == 0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(side, 0)
        nursery.start_soon(side, 1)
    return tuple(Connection(streams[i], handshake=False, tls=channels[i], **options) for i in (0, 1))


def test_direct_writes_on_tls_keep_order_behind_a_write_that_did_not_fit(tls_pair):
    """A 4 MiB burst is encrypted and written straight to the socket, the sender task finishes it, and
    bursts sent meanwhile arrive after it, in order (records in the order they were made)."""

    async def main():
        sender, receiver = await _tls_connections(tls_pair)
        assert sender._fd is not None  # the fast path: direct writes on the socket's descriptor
        await order_behind_a_big_write(sender, receiver)

    trio.run(main)


def test_a_tls_peer_that_stops_reading_is_dropped_after_the_stall_timeout(tls_pair):
    """Backpressure as on a plain socket: 2 MiB of records wait and the peer reads none for 0.5 s."""

    async def main():
        conn, peer = await _tls_connections(tls_pair, small_buffers=True, stall_timeout=0.5)
        conn.send(TaskToWorker(b"x" * (2 * MB)))
        with trio.fail_after(5):
            reason = await conn.serve(lambda msgs: None)
        assert "accepted no byte for 0.5 s" in reason and "the peer does not read" in reason
        await peer.aclose()

    trio.run(main)


def test_a_changed_byte_on_tls_ends_the_connection_with_one_tls_line(tls_pair):
    """A record whose byte was flipped on the way: `serve` ends with "lost: TLS: <reason>", nothing of
    it is delivered."""

    async def main():
        server, client = await _tls_connections(tls_pair)
        record = bytearray(client.tls.encrypt(encode_frames([Heartbeat()])))
        record[-3] ^= 0x40
        await client.stream.send_all(bytes(record))
        got = []
        with trio.fail_after(5):
            reason = await server.serve(got.extend)
        assert got == [] and "lost: TLS: " in reason and "\n" not in reason
        await client.aclose()

    trio.run(main)


def test_records_cut_at_every_byte_are_reassembled(tls_pair):
    """Ciphertext fed one byte at a time gives the plaintext once each record is whole, nothing before."""

    async def main():
        server, client = await _tls_connections(tls_pair)
        plain = bytes(encode_frames([GetTask(7), TaskToWorker(b"y" * 40_000)]))  # three records
        data = client.tls.encrypt(plain)
        out = [server.tls.decrypt(data[i : i + 1]) for i in range(len(data))]
        assert b"".join(out) == plain and out[0] == b""
        assert sum(1 for chunk in out if chunk) == 3
        await server.aclose()
        await client.aclose()

    trio.run(main)


def test_a_message_that_came_with_the_handshakes_last_read_is_delivered(tls_pair, autojump_clock):
    """TLS 1.2, where the server finishes the handshake last and may write at once: its Finished and
    its first message reach the client in one read; that message is the client's first batch."""

    def context(tls: TLS, server_side: bool) -> ssl.SSLContext:
        purpose = ssl.Purpose.CLIENT_AUTH if server_side else ssl.Purpose.SERVER_AUTH
        ctx = ssl.create_default_context(purpose, cafile=tls.ca)
        ctx.check_hostname = False
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(tls.cert, tls.key)
        return ctx

    async def main():
        server_stream, client_stream = trio.testing.memory_stream_pair()
        # the client's reads wait a little first, so what the server sent back to back comes in one
        client_stream.receive_stream.receive_some_hook = partial(trio.sleep, 0.1)
        server_channel = TLSChannel(context(tls_pair[0], True), server_side=True)
        client_channel = TLSChannel(context(tls_pair[1], False), server_side=False)

        async def server() -> None:
            await server_channel.handshake(server_stream)
            await Connection(server_stream, handshake=False, tls=server_channel).send_now([GetTask(5)])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            await client_channel.handshake(client_stream)
        assert client_channel.buffered  # the message came with the handshake: the test relies on that
        client = Connection(client_stream, handshake=False, tls=client_channel)
        with trio.fail_after(5):
            assert await client.receive_batch() == [GetTask(5)]
        with pytest.raises(ConnectionLost):
            await server_stream.aclose()
            await client.receive_batch()

    trio.run(main, clock=autojump_clock)


def test_sending_on_a_broken_tls_session_closes_the_connection_without_an_error(tls_pair, caplog):
    """Once a bad record broke the session, TLS refuses to encrypt: a send, a send_later burst the sender
    task encodes later, and a handshake-time send each end in a closing connection (or ConnectionLost),
    never an exception out of the connection."""

    async def main():
        server, client = await _tls_connections(tls_pair)
        record = bytearray(client.tls.encrypt(encode_frames([Heartbeat()])))
        record[-3] ^= 0x40
        with pytest.raises(ssl.SSLError):
            server.tls.decrypt(bytes(record))
        server.send(GetTask(1))
        assert server._closing
        server._later.append([GetTask(2)])
        server._encode_later()  # what the sender task does with send_later's bursts
        assert not server._later and not server._outbox
        with pytest.raises(ConnectionLost):
            await server.send_now([GetTask(3)])
        await server.aclose()
        await client.aclose()

    trio.run(main)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
