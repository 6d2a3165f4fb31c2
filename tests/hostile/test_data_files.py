"""Memory files passed on Unix data links (FetchFile -> ValueFile + a descriptor) against hostile peers: a holder
that passes no descriptor or several, a file it can still write, something that is not a memory file, a file
of another size, a ValueFile where chunks were due, or nothing at all; a client that sends descriptors to the
data listener. Each fetch fails with ValueLost naming what was wrong, every descriptor that came is closed, the
fetcher's next fetch works, and the listener goes on serving."""

from __future__ import annotations

import array
import contextlib
import mmap
import os
import socket
import tempfile
from functools import partial

import pytest
import trio

from sparrow_runtime.data import shared
from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.errors import ValueLost
from sparrow_runtime.services.listen import open_listeners
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import FetchFile, FetchValue, ValueFile, ValueRef

from ..runtime.data.test_files import SECRET, _serving
from .test_data_plane import KEY, lying_handler

pytestmark = pytest.mark.skipif(not shared.AVAILABLE, reason="memory files are Linux only")
SIZE = 2_000_000
_encoder = __import__("msgspec").msgpack.Encoder()


def _frame(msg) -> bytes:
    body = _encoder.encode(msg)
    return len(body).to_bytes(4, "big") + body


async def _send(conn, msg, fds: list[int]) -> None:
    """`msg`'s frame on `conn`'s socket, with `fds` passed beside it (SCM_RIGHTS; none: a plain send)."""
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    await conn.stream.socket.sendmsg([_frame(msg)], ancillary)


def _memfd(size: int, name: str = "liar", seal: bool = True) -> int:
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seal:
        shared.seal_fd(fd)
    return fd


def _open_memfds(name: str) -> int:
    """How many descriptors of this process name a memory file called `name`."""
    count = 0
    for entry in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{entry}").startswith(f"/memfd:{name} ")
    return count


async def _lying_holder(answer, nursery, folder: str) -> str:
    """A data listener on a Unix socket in `folder` that passes the handshake and answers each FetchFile or
    FetchValue with `answer(conn, msg)`; its address."""
    handle = lying_handler(answer, (FetchFile, FetchValue))
    path = os.path.join(folder, f"liar-{os.urandom(4).hex()}.data")
    await nursery.start(trio.serve_listeners, handle, await open_listeners("unix:" + path, 0))
    return "unix:" + path


async def _honest(conn, msg) -> None:
    fd = _memfd(SIZE, "honest")
    await _send(conn, ValueFile(SIZE), [fd])
    os.close(fd)


async def _refused(answer, match: str, stall_timeout: float = 5.0, liars_own: int = 0) -> None:
    """A fetch of SIZE bytes from a holder answering with `answer` fails with ValueLost matching `match`, no
    descriptor of the liar's files stays open here (but `liars_own`, the liar's), and the same DataLinks then
    fetches from an honest one."""
    with tempfile.TemporaryDirectory() as folder:
        async with trio.open_nursery() as nursery:
            liar = await _lying_holder(answer, nursery, folder)
            good = await _lying_holder(_honest, nursery, folder)
            links = DataLinks(
                link=LinkConfig(secret=KEY),
                role="node-monitor",
                peer_id="victim",
                shared_over=1000,
                stall_timeout=stall_timeout,
            )
            with trio.fail_after(stall_timeout + 5):
                with pytest.raises(ValueLost, match=match):
                    await links.fetch(ValueRef("liar", liar, os.urandom(16), SIZE))
                assert _open_memfds("liar") == liars_own
                value = await links.fetch(ValueRef("liar", good, os.urandom(16), SIZE))
                assert type(value) is shared.SharedValue and len(value) == SIZE
            await links.aclose()
            nursery.cancel_scope.cancel()


def test_a_value_file_without_a_descriptor_is_refused():
    """ValueFile and nothing beside it: the holder broke the protocol."""

    async def answer(conn, msg):
        await _send(conn, ValueFile(SIZE), [])

    trio.run(_refused, answer, "broke the protocol: .*ValueFile came with 0 descriptors, not 1")


def test_a_value_file_with_several_descriptors_is_refused_and_all_are_closed():
    """ValueFile with three memory files: refused, and none of the three stays open at the fetcher."""

    async def answer(conn, msg):
        fds = [_memfd(SIZE) for _ in range(3)]
        await _send(conn, ValueFile(SIZE), fds)
        for fd in fds:
            os.close(fd)

    trio.run(_refused, answer, "ValueFile came with 3 descriptors, not 1")


def test_a_file_its_holder_can_still_write_is_refused():
    """An unsealed memory file the holder keeps mapped writable: it cannot be sealed, so it is refused."""

    async def answer(conn, msg):
        fd = _memfd(SIZE, seal=False)
        writable = mmap.mmap(fd, SIZE)  # held (with its own descriptor) until the test ends
        await _send(conn, ValueFile(SIZE), [fd])
        os.close(fd)
        try:
            await trio.sleep_forever()
        finally:
            writable.close()

    match = "its memory file was refused: a shared value that its sender may still change"
    trio.run(partial(_refused, answer, match, liars_own=1))


def test_a_descriptor_that_is_not_a_memory_file_is_refused():
    """A plain file of the value's size, or a pipe's end, passed as the value: refused."""

    async def plain_file(conn, msg):
        with tempfile.TemporaryFile() as file:
            file.truncate(SIZE)
            await _send(conn, ValueFile(SIZE), [file.fileno()])

    async def pipe(conn, msg):
        read, write = os.pipe()
        await _send(conn, ValueFile(SIZE), [read])
        os.close(read)
        os.close(write)

    trio.run(_refused, plain_file, "its memory file was refused: a shared value that is not a memory file")
    trio.run(_refused, pipe, "its memory file holds 0 bytes")


def test_a_file_of_another_size_than_the_reference_is_refused():
    """A sealed file one byte short, one a byte longer, or a ValueFile announcing another size: refused."""

    def passing(size: int, announced: int = SIZE):
        async def answer(conn, msg):
            fd = _memfd(size)
            await _send(conn, ValueFile(announced), [fd])
            os.close(fd)

        return answer

    trio.run(_refused, passing(SIZE - 1), f"its memory file holds {SIZE - 1:,} bytes")
    trio.run(_refused, passing(SIZE + 1), f"its memory file holds {SIZE + 1:,} bytes")
    trio.run(_refused, passing(SIZE, SIZE * 2), f"the holder announced {2 * SIZE:,} bytes")


def test_a_value_file_where_chunks_were_due_is_refused():
    """A fetcher that asked with FetchValue (no memory file wanted) gets ValueFile: not allowed there."""

    async def answer(conn, msg):
        await _send(conn, ValueFile(SIZE), [])

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            async with trio.open_nursery() as nursery:
                liar = await _lying_holder(answer, nursery, folder)
                links = DataLinks(link=LinkConfig(secret=KEY), role="node-monitor", peer_id="victim")  # values as bytes
                with trio.fail_after(10), pytest.raises(ValueLost, match="ValueFile is not allowed here"):
                    await links.fetch(ValueRef("liar", liar, os.urandom(16), SIZE))
                await links.aclose()
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_holder_that_never_answers_a_fetch_file_loses_the_value_after_the_stall_timeout():
    """FetchFile and then silence: ValueLost saying the transfer stalled."""

    async def answer(conn, msg):
        await trio.sleep_forever()

    trio.run(partial(_refused, answer, r"stalled \(0 of 2,000,000 bytes came, then nothing for 0.3 s\)", 0.3))


def test_descriptors_a_client_sends_to_the_data_listener_are_dropped_and_it_goes_on_serving():
    """A peer that passes memory files beside its FetchFile frames: the listener answers as usual and keeps
    none of them open."""

    async def test(server, store, address):
        key = store.put(shared.share(b"s" * SIZE))
        links = DataLinks(link=LinkConfig(secret=SECRET), role="node-monitor", peer_id="sender", shared_over=1000)
        conn, _ = await links._link(ValueRef("nm", address, key, SIZE))
        fd = _memfd(SIZE, "pushed")
        await _send(conn, FetchFile(key), [fd])
        os.close(fd)
        reply = await links._receive_file_answer(conn.stream.socket, conn, ValueRef("nm", address, key, SIZE))
        assert type(reply) is shared.SharedValue and bytes(reply[:3]) == b"sss"
        assert _open_memfds("pushed") == 0
        await conn.aclose()
        assert server.stats["served_files"] == 1
        await links.aclose()

    trio.run(_serving, test)
