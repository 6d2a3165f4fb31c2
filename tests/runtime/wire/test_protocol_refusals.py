"""Bad peers on real loopback are refused with a reason while a concurrent job still completes."""

import time
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    HandshakeError,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.messages import PROTOCOL_VERSION, Authenticate, Challenge, Error

SECRET = "refusal-secret"


async def _read_until_closed(stream, decoder=None) -> list:
    """Every message the server sends until it closes the connection (then closed here too)."""
    decoder, got = decoder or FrameDecoder(), []
    async with stream:
        with trio.fail_after(10):
            while data := await stream.receive_some(65536):
                got += decoder.feed(data)
    return got


async def _wrong_secret(address):
    with pytest.raises(HandshakeError, match="authentication failed"):
        await connect(address, link=LinkConfig(secret=b"not-the-secret"), role="client", peer_id="intruder")
    return "authentication failed"


async def _wrong_version(address):
    stream = await trio.open_tcp_stream(*address)
    decoder = FrameDecoder()
    (challenge,) = decoder.feed(await stream.receive_some(65536))
    assert isinstance(challenge, Challenge)
    await stream.send_all(encode_frames([Authenticate(PROTOCOL_VERSION + 1, "client", "old", b"m" * 32, b"n" * 32)]))
    return (await _read_until_closed(stream, decoder))[-1]


async def _after_handshake(address, data):
    conn = await connect(address, link=LinkConfig(secret=SECRET.encode()), role="client", peer_id="rude")
    await conn.stream.send_all(data)
    return (await _read_until_closed(conn.stream))[-1]


async def _garbage_before_handshake(address):
    stream = await trio.open_tcp_stream(*address)
    await stream.send_all(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n\r\n")
    return (await _read_until_closed(stream))[-1]


def test_bad_peers_are_refused_while_a_job_completes():
    async def main():
        async with trio.open_nursery() as nursery:
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret=SECRET, max_frame=1 << 20)))
            )
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret=SECRET), schedulers=[address], executor="thread", slots=2),
                )
            )
            async with Client([address], secret=SECRET) as client:
                job = await client.submit_job([partial(time.sleep, 0.002)] * 100)
                refusals = {
                    "secret": await _wrong_secret(address),
                    "version": await _wrong_version(address),
                    "oversized": await _after_handshake(address, (1 << 30).to_bytes(4, "big")),
                    "garbage": await _after_handshake(address, b"\x00\x00\x00\x04\xc1\xc1\xc1\xc1"),
                    "pre-handshake garbage": await _garbage_before_handshake(address),
                }
                assert not job.done()  # the refusals really happened while the job was running
                assert await job.results() == [None] * 100
            for name, expected in [
                ("version", "protocol version mismatch"),
                ("oversized", "exceeds the limit of 1048576 bytes"),
                ("garbage", "undecodable"),
                ("pre-handshake garbage", "undecodable"),
            ]:
                assert isinstance(refusals[name], Error) and expected in refusals[name].reason, name
            nursery.cancel_scope.cancel()

    trio.run(main)
