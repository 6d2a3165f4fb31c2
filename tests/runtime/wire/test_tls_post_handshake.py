"""The TLS layer's records after the handshake, sent by a TLS stack that is not ours: the `openssl`
command-line tool (s_server / s_client, OpenSSL's own test peers) on one end of a loopback link and a
Connection over tls_channel.TLSChannel on the other.

Python's ssl cannot make a peer send a KeyUpdate or renegotiate, but `openssl s_server` and `s_client`
do when told on their standard input (`K`: a TLS 1.3 KeyUpdate that requests ours; `R`: a TLS 1.2
renegotiation), print every TLS message they send and receive (`-msg`), and print the application
data they decrypt. So these tests show, with bytes a real peer sent:
- the channel reads on after the peer changed its keys, and its own KeyUpdate (which OpenSSL sends
  with the next write, as RFC 8446 4.6.3 allows) leaves before that write's data, so the peer decrypts it;
- session tickets (post-handshake messages with no plaintext) are taken in passing;
- a close_notify ends the connection as the peer's close, not as a TLS error;
- a TLS 1.2 renegotiation is refused either way (the no_renegotiation alert that OpenSSL makes while
  reading goes out through the connection's output path): a server keeps its session, a client that
  insists gets one line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from sparrow_runtime.wire.certs import local_certs
from sparrow_runtime.wire.connection import Connection
from sparrow_runtime.wire.framing import encode_frames
from sparrow_runtime.wire.messages import TaskToWorker
from sparrow_runtime.wire.tls import TLS, start_tls

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command-line tool")

DEADLINE = 20.0  # seconds for one scenario (two processes and a handshake on a loaded machine)
RECEIVED_KEY_UPDATE = b"<<< TLS 1.3, Handshake [length 0005], KeyUpdate"  # -msg: a KeyUpdate it read
SENT_KEY_UPDATE = b">>> TLS 1.3, Handshake [length 0005], KeyUpdate"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[str, str, str]]:
    return local_certs(tmp_path_factory.mktemp("tls"), "tester")


class OpenSSLPeer:
    """An `openssl` process whose output (stdout and stderr) is collected; `type` writes to its stdin."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.output = bytearray()
        self.finished = trio.Event()  # its output ended (it exited)

    @classmethod
    async def start(cls, nursery: trio.Nursery, args: list[str]) -> OpenSSLPeer:
        process = await trio.lowlevel.open_process(
            [OPENSSL, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        peer = cls(process)
        nursery.start_soon(peer._collect)
        return peer

    async def _collect(self) -> None:
        assert self.process.stdout is not None
        while data := await self.process.stdout.receive_some(65536):
            self.output += data
        self.finished.set()

    async def wait_for(self, pattern: bytes, start: int = 0) -> re.Match:
        """The first match of `pattern` in the output from `start`, once it is there."""
        while (found := re.compile(pattern).search(self.output, start)) is None:
            await trio.sleep(0.01)
        return found

    async def type(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def stop(self) -> None:
        """Kill the process if it still runs, reap it and close its pipes."""
        if self.process.returncode is None:
            self.process.kill()
        with trio.CancelScope(shield=True):
            await self.process.wait()
            await self.finished.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    await pipe.aclose()


class Link:
    """A Connection over TLS to an OpenSSLPeer, served in the background: what it received, and why
    it ended (`ended`, once it did)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.received: list = []
        self.arrived = trio.Event()
        self.ended: list[str] = []

    def on_messages(self, msgs: list) -> None:
        self.received.extend(msgs)
        self.arrived.set()

    async def serve(self) -> None:
        self.ended.append(await self.conn.serve(self.on_messages))

    async def wait_end(self) -> str:
        while not self.ended:
            await trio.sleep(0.01)
        return self.ended[0]


@asynccontextmanager
async def linked(files: dict, side: str, version: str, *options: str) -> AsyncIterator[tuple[OpenSSLPeer, Link]]:
    """`openssl s_server` (side "server": our Connection is its client) or `s_client` (side "client":
    our Connection serves it) on TLS `version` ("1.2" or "1.3"), handshake done on both ends; the whole
    scenario is bounded by DEADLINE and the process is gone after it."""
    ours, theirs = ("client", "scheduler") if side == "server" else ("scheduler", "client")
    ca, cert, key = files[theirs]
    common = [
        "-cert",
        cert,
        "-key",
        key,
        "-CAfile",
        ca,
        "-verify_return_error",
        "-tls" + version.replace(".", "_"),
        *options,
    ]
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            if side == "server":
                peer = await OpenSSLPeer.start(
                    nursery, ["s_server", "-accept", "127.0.0.1:0", "-Verify", "1", "-naccept", "1", "-msg", *common]
                )
                listeners = []
            else:
                listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
                port = listeners[0].socket.getsockname()[1]
                peer = await OpenSSLPeer.start(nursery, ["s_client", "-connect", f"127.0.0.1:{port}", "-msg", *common])
            try:
                if side == "server":
                    port = int((await peer.wait_for(rb"ACCEPT 127\.0\.0\.1:(\d+)"))[1])
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                else:
                    stream = await listeners[0].accept()
                channel = await start_tls(stream, TLS(*files[ours]), server_side=side == "client")
                link = Link(Connection(stream, handshake=False, tls=channel, peer_name=f"s_{side}"))
                nursery.start_soon(link.serve)
                # the peer's handshake is done once it printed its session summary
                await peer.wait_for(b"CIPHER is " if side == "server" else b"Verify return code: 0 \\(ok\\)")
                yield peer, link
                link.conn.close_soon()
            finally:
                await peer.stop()
                for listener in listeners:
                    await listener.aclose()


async def exchange(peer: OpenSSLPeer, link: Link, theirs: bytes, ours: bytes) -> re.Match:
    """One message each way: `theirs` typed into the peer arrives at the Connection, then `ours` sent by
    the Connection is decrypted by the peer (its match in the peer's output)."""
    link.arrived = trio.Event()
    await peer.type(bytes(encode_frames([TaskToWorker(theirs)])))
    await link.arrived.wait()
    assert link.received[-1] == TaskToWorker(theirs)
    link.conn.send(TaskToWorker(ours))
    return await peer.wait_for(re.escape(ours))


async def key_update_both_ways(peer: OpenSSLPeer, link: Link) -> None:
    """Have `peer` send KeyUpdate(update_requested), exchange one message each way under the new keys,
    and check that the peer read our KeyUpdate before our message."""
    await peer.type(b"K\n")
    await peer.wait_for(re.escape(SENT_KEY_UPDATE))
    ours = await exchange(peer, link, b"sent by openssl under its new key", b"sent by sparrow under its new key")
    answer = peer.output.find(RECEIVED_KEY_UPDATE)
    assert 0 <= answer < ours.start(), peer.output.decode(errors="replace")[-3000:]
    assert b"bad record mac" not in peer.output.lower()


def test_a_client_connection_follows_a_key_update_asked_by_openssl_s_server_and_answers_it_in_order(files):
    """s_server sends 2 session tickets, then KeyUpdate(update_requested): the client Connection takes
    the tickets, reads s_server's next message under its new key, and its KeyUpdate precedes its own
    next message, which s_server decrypts."""

    async def main():
        async with linked(files, "server", "1.3", "-num_tickets", "2") as (peer, link):
            assert len(re.findall(rb">>> TLS 1\.3, Handshake \[length \w+\], NewSessionTicket", peer.output)) == 2
            await key_update_both_ways(peer, link)

    trio.run(main)


def test_a_server_connection_follows_a_key_update_asked_by_openssl_s_client_and_ends_on_its_close_notify(files):
    """s_client sends KeyUpdate(update_requested): the server Connection reads its next message under
    the new key and answers in order; s_client's close_notify (its stdin closed) ends the connection
    as the peer's close, without a TLS error."""

    async def main():
        async with linked(files, "client", "1.3") as (peer, link):
            await key_update_both_ways(peer, link)
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()  # s_client ends the session: close_notify, then FIN
            assert await link.wait_end() == "s_client closed the connection"
            await peer.finished.wait()
            assert (
                peer.output.count(b">>> TLS 1.2, Alert [length 0002], warning close_notify")
                + peer.output.count(b">>> TLS 1.3, Alert [length 0002], warning close_notify")
                == 1
            )

    trio.run(main)


@pytest.mark.parametrize("side", ["server", "client"])
def test_a_tls12_renegotiation_is_refused_either_way_and_the_connection_ends_with_one_line(files, side):
    """s_server (HelloRequest) or s_client (a new ClientHello) on TLS 1.2 asks to renegotiate: the
    Connection answers no_renegotiation (an alert OpenSSL makes while reading, sent by the connection's
    output path), so the certificate it checked, hence the peer's role and user, stays the session's;
    the peer, insisting, ends with a fatal alert, and the connection with one TLS line."""

    async def main():
        async with linked(files, side, "1.2") as (peer, link):
            start = len(peer.output)
            await peer.type(b"R\n")
            await peer.wait_for(rb"<<< TLS 1\.2, Alert \[length 0002\], warning no_renegotiation", start)
            reason = await link.wait_end()
            assert reason.startswith(f"connection to s_{side} lost: TLS: ") and "\n" not in reason
            hellos = re.findall(rb"<<< TLS 1\.\d, Handshake \[length \w+\], (?:Client|Server)Hello\n", peer.output)
            assert len(hellos) == 1  # the peer got the first handshake's hello only: none was renegotiated

    trio.run(main)
