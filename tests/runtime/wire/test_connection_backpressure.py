"""A peer that does not read is judged by its progress (connection.py): one that stops reading is
dropped after `stall_timeout`, one that reads slowly is not, however long a big transfer takes; and
`send_later` holds bursts unencoded, in order, while the link is full. Real sockets and real time
(the stall deadline runs against I/O, which an autojumping clock would skip), a few seconds each."""

from __future__ import annotations

import contextlib
import socket

import trio

from sparrow_runtime.wire import limits
from sparrow_runtime.wire.connection import Connection
from sparrow_runtime.wire.framing import FrameDecoder
from sparrow_runtime.wire.messages import GetTask, Heartbeat, TaskToWorker

MB = 1 << 20


def _pair(**options) -> tuple[Connection, socket.socket]:
    """A connection over one end of a socket pair with small buffers, and the raw other end."""
    left, right = socket.socketpair()
    for sock in (left, right):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    right.setblocking(False)
    return Connection(trio.SocketStream(trio.socket.from_stdlib_socket(left)), handshake=False, **options), right


async def _read(sock: socket.socket, conn: Connection, got: list, count: int, chunk: int, pause: float) -> None:
    """Read `chunk` bytes every `pause` seconds into `got` (decoded) until `count` messages came, then
    close `conn` (within 20 s)."""
    decoder = FrameDecoder(conn.max_frame)
    with trio.fail_after(20):
        while len(got) < count:
            await trio.sleep(pause)
            with contextlib.suppress(BlockingIOError):
                got.extend(decoder.feed(sock.recv(chunk)))
    conn.close_soon()


def test_a_peer_that_stops_reading_is_dropped_after_the_stall_timeout():
    """Bytes wait and the peer accepts none for 0.5 s: `serve` ends with a reason that says so, though
    far fewer bytes wait than the memory bound."""

    async def main():
        conn, peer = _pair(stall_timeout=0.5)
        conn.send(TaskToWorker(b"x" * (2 * MB)))
        assert conn.unsent < conn.unsent_limit
        with trio.fail_after(5):
            started = trio.current_time()
            reason = await conn.serve(lambda msgs: None)
        assert "accepted no byte for 0.5 s" in reason and "the peer does not read" in reason
        assert 0.5 <= trio.current_time() - started < 3
        peer.close()

    trio.run(main)


def test_a_peer_that_reads_slowly_is_kept_however_long_the_transfer_takes():
    """Three frames of 5 MiB to a peer reading 256 KiB every 20 ms: the transfer takes several times
    the stall timeout of 0.3 s, and every frame arrives in order with the connection kept."""

    async def main():
        conn, peer = _pair(stall_timeout=0.3, max_frame=6 * MB)
        frames = [TaskToWorker(bytes([i]) * (5 * MB)) for i in range(3)]
        conn.send_many(frames)
        got: list = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read, peer, conn, got, 3, 256 * 1024, 0.02)
            started = trio.current_time()
            reason = await conn.serve(lambda msgs: None)
            elapsed = trio.current_time() - started
            peer.close()
        assert got == frames and "does not read" not in reason
        assert elapsed > 0.3  # slower than the stall timeout: judged by progress, not duration

    trio.run(main)


def test_send_later_waits_unencoded_in_order_while_the_link_is_full():
    """Behind a 4 MiB frame the link is full: later bursts wait unencoded (what is encoded stays
    within LINK_FULL plus one frame), a plain send overtakes them, they arrive in their order, and
    `wait_room` returns once the peer has read enough."""

    async def main():
        conn, peer = _pair()
        conn.send(TaskToWorker(b"a" * (4 * MB)))
        assert not conn.has_room
        later = [[TaskToWorker(bytes([i]) * (3 * MB)), GetTask(i)] for i in range(4)]
        for burst in later:
            conn.send_later(burst)
        conn.send(Heartbeat())
        assert conn.unsent < 4 * MB + limits.LINK_FULL  # the held bursts are not encoded yet
        got: list = []
        room = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read, peer, conn, got, 10, 1 * MB, 0.001)

            async def note_room():
                await conn.wait_room()
                room.append(len(got))

            nursery.start_soon(note_room)
            await conn.serve(lambda msgs: None)
            peer.close()
        assert got[:2] == [TaskToWorker(b"a" * (4 * MB)), Heartbeat()]
        assert got[2:] == [msg for burst in later for msg in burst]
        assert room and room[0] >= 8  # room only once the held bursts had gone out

    trio.run(main)
