"""The handshake gate (gate.py) over real loopback sockets: per-source and total bounds, the oldest pending
connection evicted (never the newcomer) and told why, silent peers counted, the log line rate-limited; and a
client evicted or refused by a gate reads "refused: too many pending connections", on TLS too."""

from __future__ import annotations

import logging
import socket

import pytest
import trio

from sparrow_runtime.errors import HandshakeError, SilentPeer
from sparrow_runtime.wire.gate import PENDING_REFUSAL, REFUSAL_BYTES, UNIX_SOURCE, HandshakeGate, peer_source
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.link_config import LinkConfig


class _Door:
    """A listener on 127.0.0.1 whose every connection waits in `gate` until the test ends; `outcomes` maps
    each connection's index (in arrival order) to "evicted" once the gate evicted it."""

    def __init__(self, gate: HandshakeGate) -> None:
        self.gate = gate
        self.outcomes: dict[int, str] = {}
        self.arrived = 0
        self.address: tuple[str, int] = ("", 0)

    async def serve(self, nursery: trio.Nursery) -> None:
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        self.address = listener.socket.getsockname()[:2]
        nursery.start_soon(trio.serve_listeners, self._handle, [listener])

    async def _handle(self, stream: trio.SocketStream) -> None:
        index = self.arrived
        self.arrived += 1
        try:
            with self.gate.admit(stream):
                await trio.sleep_forever()
        except HandshakeError as exc:
            assert str(exc) == PENDING_REFUSAL
            self.outcomes[index] = "evicted"


def _dial(address: tuple[str, int], source: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(address)
    return sock


async def _settle(door: _Door, arrived: int) -> None:
    with trio.fail_after(5):
        while door.arrived < arrived:
            await trio.sleep(0.005)
        await trio.sleep(0.02)  # let the gate act on the last arrival


def _refused(sock: socket.socket) -> bool:
    """Whether the service told `sock` PENDING_REFUSAL and closed it."""
    sock.settimeout(5)
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got == REFUSAL_BYTES


def test_a_source_at_its_bound_loses_its_oldest_connection_not_the_newcomer():
    """Per source 3: the 4th and 5th connections from 127.0.0.2 evict its 1st and 2nd (each told why and
    closed); another source's connection stays untouched."""

    async def main():
        door = _Door(HandshakeGate(limit=10, per_source=3))
        async with trio.open_nursery() as nursery:
            await door.serve(nursery)
            other = await trio.to_thread.run_sync(_dial, door.address, "127.0.0.1")
            await _settle(door, 1)
            flood = []
            for i in range(5):
                flood.append(await trio.to_thread.run_sync(_dial, door.address, "127.0.0.2"))
                await _settle(door, i + 2)
            assert door.outcomes == {1: "evicted", 2: "evicted"}
            assert door.gate.pending == 4 and door.gate.evicted == 2
            assert await trio.to_thread.run_sync(_refused, flood[0])
            assert await trio.to_thread.run_sync(_refused, flood[1])
            for sock in [other, *flood]:
                sock.close()
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_full_gate_evicts_the_oldest_of_the_busiest_source():
    """In all 4, per source 3: with 3 from 127.0.0.2 and 1 from 127.0.0.3, a newcomer from 127.0.0.4 evicts the
    oldest of 127.0.0.2, the source with the most pending."""

    async def main():
        door = _Door(HandshakeGate(limit=4, per_source=3))
        async with trio.open_nursery() as nursery:
            await door.serve(nursery)
            socks = []
            for i, source in enumerate(["127.0.0.3", "127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.4"]):
                socks.append(await trio.to_thread.run_sync(_dial, door.address, source))
                await _settle(door, i + 1)
            assert door.outcomes == {1: "evicted"}
            assert door.gate.pending == 4
            for sock in socks:
                sock.close()
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_evictions_are_logged_at_most_once_per_interval_naming_the_source(caplog):
    """Ten evictions from one source give one warning line, which names that source and counts them."""

    async def main():
        door = _Door(HandshakeGate(limit=2, per_source=1))
        async with trio.open_nursery() as nursery:
            await door.serve(nursery)
            socks = []
            for i in range(11):
                socks.append(await trio.to_thread.run_sync(_dial, door.address, "127.0.0.2"))
                await _settle(door, i + 1)
            assert door.gate.evicted == 10
            for sock in socks:
                sock.close()
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, logger="sparrow_runtime.wire.gate"):
        trio.run(main)
    lines = [r.getMessage() for r in caplog.records if r.name == "sparrow_runtime.wire.gate"]
    assert len(lines) == 1
    assert "127.0.0.2" in lines[0] and "too many pending connections" in lines[0]


def test_silent_peers_are_counted_by_the_gate_not_logged_one_by_one(caplog):
    """A body that ends in SilentPeer (handshake.accept's first-byte deadline) counts in the gate."""

    async def main():
        gate = HandshakeGate()
        left, _right = trio.testing.memory_stream_pair()
        for _ in range(3):
            with pytest.raises(SilentPeer), gate.admit(left):
                raise SilentPeer("sent nothing within 1.0 s")
        assert (gate.silent, gate.pending, gate.evicted) == (3, 0, 0)

    with caplog.at_level(logging.WARNING):
        trio.run(main)
    assert len([r for r in caplog.records if r.name == "sparrow_runtime.wire.gate"]) == 1


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="per_source"):
        HandshakeGate(limit=4, per_source=5)
    with pytest.raises(ValueError, match="per_source"):
        HandshakeGate(limit=4, per_source=0)


def test_peer_source_is_the_ip_or_the_unix_peer():
    async def main():
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        client = await trio.open_tcp_stream(*listener.socket.getsockname()[:2])
        server = await listener.accept()
        assert peer_source(server) == "127.0.0.1"
        a, b = (trio.SocketStream(s) for s in trio.socket.socketpair(socket.AF_UNIX))
        assert peer_source(a) == UNIX_SOURCE
        assert peer_source(trio.testing.memory_stream_pair()[0]) == "unknown"
        for s in (client, server, listener, a, b):
            await s.aclose()

    trio.run(main)


@pytest.mark.parametrize("mode", ["insecure", "tls"])
def test_a_client_the_gate_refuses_is_told_so_not_blamed_on_tls(mode, cluster_certs):
    """A service that evicts a connection writes the refusal in plain text: the client's error says
    "refused: too many pending connections", on TLS as without it."""

    async def main():
        async def refuse(stream: trio.SocketStream) -> None:
            with trio.move_on_after(0.2):  # the client's first flight has come (on TLS)
                await stream.receive_some(1)
            await stream.send_all(REFUSAL_BYTES)
            await stream.aclose()

        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        address = listener.socket.getsockname()[:2]
        credentials = {"tls": cluster_certs.tls("alice")} if mode == "tls" else {"secret": b"s"}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, refuse, [listener])
            with pytest.raises(HandshakeError, match=PENDING_REFUSAL):
                await connect(address, link=LinkConfig(handshake_timeout=3, **credentials), role="client", peer_id="c")
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_refusals_of_one_source_are_logged_once_per_interval_and_counted(autojump_clock):
    """The first refusal from a source is logged; the next ones within LOG_EVERY are not, and the next
    line says how many; another source has its own interval."""

    async def main():
        gate = HandshakeGate()
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        address = listener.socket.getsockname()[:2]
        streams = []
        for source in ("127.0.0.2", "127.0.0.3"):
            sock = await trio.to_thread.run_sync(_dial, address, source)
            streams.append((sock, await listener.accept()))
        stranger, neighbour = streams[0][1], streams[1][1]
        notes = [gate.refusal_note(stranger) for _ in range(4)]
        assert notes == ["", None, None, None]
        assert gate.refusal_note(neighbour) == ""
        await trio.sleep(HandshakeGate.LOG_EVERY)
        assert gate.refusal_note(stranger) == " (3 more from 127.0.0.2 not logged)"
        assert gate.refusal_note(stranger) is None
        for sock, stream in streams:
            sock.close()
            await stream.aclose()
        await listener.aclose()

    trio.run(main, clock=autojump_clock)


def test_unix_socket_peers_count_under_the_total_bound_only(tmp_path):
    """Every Unix-socket peer is this host's: 5 of them pending at a gate of 3 per source and 6 in all are
    all held; the 7th makes the oldest go."""

    async def main():
        gate = HandshakeGate(limit=6, per_source=3)
        path = str(tmp_path / "gate.sock")
        sock = trio.socket.socket(socket.AF_UNIX)
        await sock.bind(path)
        sock.listen(16)
        listener = trio.SocketListener(sock)
        evicted = []

        async def hold(stream: trio.SocketStream, index: int) -> None:
            try:
                with gate.admit(stream):
                    await trio.sleep_forever()
            except HandshakeError:
                evicted.append(index)
            finally:
                stream.socket.close()

        async with trio.open_nursery() as nursery:
            clients = []
            for i in range(7):
                clients.append(await trio.open_unix_socket(path))
                nursery.start_soon(hold, await listener.accept(), i)
                await trio.sleep(0.01)
                if i == 4:
                    assert (gate.pending, evicted) == (5, [])
            assert evicted == [0] and gate.pending == 6
            nursery.cancel_scope.cancel()
        for c in clients:
            await c.aclose()
        await listener.aclose()

    trio.run(main)
