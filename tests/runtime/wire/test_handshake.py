"""The connection handshake and protocol errors (connection.py), over trio memory streams."""

from functools import partial

import pytest
import trio
import trio.testing

from sparrow_runtime.errors import HandshakeError
from sparrow_runtime.wire import auth
from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.handshake import accept, connect_stream
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import PROTOCOL_VERSION, Authenticate, Challenge, Error, GetTask, Heartbeat

SECRET = b"cluster-secret"


async def _accept(stream, **link):
    """The server side under a link of the cluster secret (and `link`'s other fields)."""
    link = LinkConfig(**{"secret": SECRET, **link})
    return await accept(stream, link=link, role="scheduler", node_id="s", allowed_roles=("client",))


async def _handshake(client_secret=SECRET, role="client", **accept_kw):
    """Run both sides; returns (server result or exception, client result or exception)."""
    left, right = trio.testing.memory_stream_pair()
    results = {}

    async def side(name, fn):
        try:
            results[name] = await fn()
        except HandshakeError as exc:
            results[name] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(side, "server", lambda: _accept(left, **accept_kw))
        nursery.start_soon(
            side,
            "client",
            lambda: connect_stream(right, link=LinkConfig(secret=client_secret), role=role, peer_id="c1"),
        )
    return results["server"], results["client"]


def test_handshake_authenticates_both_sides_and_names_them():
    async def main():
        server, client = await _handshake()
        assert (server.peer_role, server.peer_id) == ("client", "c1")
        assert (client.peer_role, client.peer_id) == ("scheduler", "s")

    trio.run(main)


def test_each_side_tells_its_max_frame_and_both_send_within_the_smaller():
    """Server 1 MiB, client 64 KiB: each side's send limit is 64 KiB, each still accepts its own
    max_frame; a message over the send limit is never written (the sender knew)."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            got = {}

            async def server():
                got["server"] = await _accept(left, max_frame=1024 * 1024)

            nursery.start_soon(server)
            client = await connect_stream(
                right, link=LinkConfig(secret=SECRET, max_frame=64 * 1024), role="client", peer_id="c1"
            )
        server = got["server"]
        assert (server.send_limit, client.send_limit) == (64 * 1024, 64 * 1024)
        assert (server.max_frame, client.max_frame) == (1024 * 1024, 64 * 1024)

    trio.run(main)


def test_a_client_telling_a_tiny_max_frame_is_refused_naming_it(caplog):
    """A client that tells 1 KiB (a liar, or misconfigured) would make every outcome to it too large:
    the server refuses it at the handshake with one line naming the value and the floor."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_client_telling, right, 1024)
            with pytest.raises(HandshakeError, match="max_frame of 1024 bytes is under the floor of 65536"):
                await _accept(left)

    trio.run(main)
    assert "client 'c1': its max_frame of 1024 bytes is under the floor" in caplog.text


def test_a_server_telling_a_tiny_max_frame_is_refused_and_told_why():
    """A server that tells 1 KiB to a client of the default max_frame: the client refuses it (one line)
    and says why to the server, whose refusal names the client's reason."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        got = {}

        async def server():
            with pytest.raises(HandshakeError) as info:
                await _accept(left, max_frame=1024)
            got["server"] = str(info.value)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            with pytest.raises(HandshakeError, match="max_frame of 1024 bytes is under the floor of 65536"):
                await connect_stream(right, link=LinkConfig(secret=SECRET), role="client", peer_id="c1")
        assert "the peer refused the connection: refused: its max_frame of 1024" in got["server"]

    trio.run(main)


def test_a_side_configured_under_the_floor_accepts_peers_as_small_as_itself():
    """The floor is the smaller of 64 KiB and a side's own max_frame: two sides both set to 1 KiB talk."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                partial(
                    connect_stream, right, link=LinkConfig(secret=SECRET, max_frame=1024), role="client", peer_id="c"
                )
            )
            server = await _accept(left, max_frame=1024)
        assert server.send_limit == 1024

    trio.run(main)


async def _client_telling(stream, max_frame: int) -> None:
    """A client that knows the secret and tells `max_frame` whatever its own is (as a liar would)."""
    decoder = FrameDecoder()
    msgs = []
    while not msgs:
        msgs = decoder.feed(await stream.receive_some(65536))
    challenge = msgs[0]
    mac = auth.proof(SECRET, "client", challenge.nonce, PROTOCOL_VERSION, "client", "c1", "scheduler", "s")
    await stream.send_all(encode_frames([Authenticate(PROTOCOL_VERSION, "client", "c1", mac, b"n" * 32, max_frame)]))
    while await stream.receive_some(65536):  # until the server closes
        pass


def test_peer_without_the_secret_is_refused_with_a_reason(caplog):
    async def main():
        server, client = await _handshake(client_secret=b"wrong")
        assert isinstance(server, HandshakeError) and "authentication failed" in str(server)
        assert isinstance(client, HandshakeError) and "does not know the cluster secret" in str(client)

    trio.run(main)
    assert "authentication failed" in caplog.text
    assert "cluster-secret" not in caplog.text and "wrong" not in caplog.text  # never log the secret


def test_role_not_allowed_is_refused():
    async def main():
        server, client = await _handshake(role="node-monitor")
        assert "may not connect" in str(server) and "may not connect" in str(client)

    trio.run(main)


async def _raw_client(stream, frames: bytes, received: list) -> None:
    """Read the Challenge, send `frames` raw, collect every message the server sends until it closes."""
    decoder = FrameDecoder()
    sent = False
    while data := await stream.receive_some(65536):
        received += decoder.feed(data)
        if not sent and received and isinstance(received[0], Challenge):
            sent = True
            await stream.send_all(frames)


@pytest.mark.parametrize(
    "frames, reason",
    [
        (encode_frames([Authenticate(PROTOCOL_VERSION + 1, "client", "c", b"m" * 32, b"n" * 32)]), "version mismatch"),
        (b"\x00\x00\x00\x05garbage", "undecodable"),
        ((1 << 30).to_bytes(4, "big"), "exceeds the limit"),
        (encode_frames([GetTask(1)]), "expected Authenticate"),
    ],
    ids=["wrong-version", "garbage", "oversized", "out-of-order"],
)
def test_bad_handshakes_get_an_error_and_a_closed_connection(frames, reason):
    async def main():
        left, right = trio.testing.memory_stream_pair()
        received = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_raw_client, right, frames, received)
            with pytest.raises(HandshakeError, match=reason):
                await _accept(left)
        assert isinstance(received[-1], Error) and reason in received[-1].reason

    trio.run(main)


def test_silent_peer_is_refused_after_the_handshake_deadline(autojump_clock):
    async def main():
        left, right = trio.testing.memory_stream_pair()
        start = trio.current_time()
        with pytest.raises(HandshakeError, match="not completed within 5"):
            await _accept(left, handshake_timeout=5)
        assert trio.current_time() - start == pytest.approx(5)
        del right

    trio.run(main, clock=autojump_clock)


def test_plaintext_client_closed_before_a_challenge_is_told_it_may_be_a_tls_service():
    """A TLS server closes a peer that sends no ClientHello: the plaintext client's error says what to try."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        await left.aclose()  # the server's side: closed without a Challenge
        with pytest.raises(
            HandshakeError, match=r"peer closed the connection before sending its Challenge \(a TLS service"
        ):
            await connect_stream(right, link=LinkConfig(secret=SECRET), role="client", peer_id="c1")

    trio.run(main)


def test_protocol_error_after_handshake_sends_error_and_closes():
    """An oversized frame on an authenticated connection: Error reply, closed, serve() returns why."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: connect_stream(
                    right, link=LinkConfig(secret=SECRET, max_frame=1024), role="client", peer_id="c1"
                )
            )
            server = await _accept(left, max_frame=1024)
        got = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(right.send_all, bytes(encode_frames([Heartbeat()])) + (4096).to_bytes(4, "big"))
            reason = await server.serve(got.extend)
        assert got == [Heartbeat()]
        assert "exceeds the limit of 1024" in reason
        tail = FrameDecoder().feed(await right.receive_some(65536))
        assert isinstance(tail[-1], Error) and "exceeds" in tail[-1].reason
        assert await right.receive_some(65536) == b""  # closed

    trio.run(main)


def test_handshake_proofs_use_the_nonce_sent():
    """A client replaying a MAC made for another nonce is refused."""

    async def main():
        left, right = trio.testing.memory_stream_pair()
        stale = auth.proof(SECRET, "client", b"\0" * 32, PROTOCOL_VERSION, "client", "c", "scheduler", "s")
        frames = encode_frames([Authenticate(PROTOCOL_VERSION, "client", "c", stale, b"n" * 32)])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_raw_client, right, frames, [])
            with pytest.raises(HandshakeError, match="authentication failed"):
                await _accept(left)

    trio.run(main)
