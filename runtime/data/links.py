"""Fetching and releasing values over data links (trio), for clients and node monitors alike.

`DataLinks.fetch(ref)` opens (or reuses) an authenticated link to the value's holder (its data
address, the handshake of every link: wire/handshake.py), asks for it and puts its chunks together
(transfer.py), waiting at most `stall_timeout` seconds for each message. Up to LINKS_PER_HOLDER
fetches from one holder run at once, one per link; a link is reused once its answer is complete.
`release(refs)` tells each holder which of its values are no longer needed (no answer).

On a plain Unix socket (the holder is on this host) a value wanted in a memory file is asked for with FetchFile,
and a holder that keeps it in one answers ValueFile with that file's descriptor (SCM_RIGHTS): nothing is copied;
the file is checked as a worker's result is (shared.adopt: sealed, not empty, of the reference's size).

Error handling: ValueLost (errors.py), naming the value's node monitor and why, when the holder cannot
be reached, does not have the value, stalls, or breaks the protocol (that link is closed; other
links go on). A link found closed before its answer began (its holder closed it for idling) is
replaced once.
"""

from __future__ import annotations

import array
import logging
import os
import socket
from collections.abc import Iterable
from typing import Any

import msgspec
import trio

from ..errors import ConnectionLost, HandshakeError, ProtocolError, ValueLost
from ..wire.address import parse_address
from ..wire.connection import Connection
from ..wire.framing import HEADER_SIZE, describe_invalid
from ..wire.handshake import connect
from ..wire.limits import CHUNK_SIZE, DEFAULT_MAX_VALUE, MAX_RELEASE_KEYS, STALL_TIMEOUT, clip
from ..wire.link_config import LinkConfig
from ..wire.messages import Error, FetchFile, FetchValue, Message, ReleaseValues, ValueFile, ValueRef
from .copies import Copies
from .shared import SharedValue, adopt
from .transfer import Assembler, TransferError, chunk_prefix

logger = logging.getLogger(__name__)

LINKS_PER_HOLDER = 4
SPARE_SCRATCH = 4  # scratch buffers of CHUNK_SIZE kept for the next transfers into memory files
FILES_PER_ANSWER = 4  # descriptors taken with one answer (one is due; more are closed at once)
SMALL_FRAME = 64 * 1024  # a frame at most this big is read whole and decoded (a header, an answer, a small chunk)
_decoder = msgspec.msgpack.Decoder(Message)


def raw_stream(conn: Connection) -> trio.SocketStream | None:
    """The plain socket stream under a data link (a wire Connection), whose chunks then go from and into
    their values directly (chunk_prefix); None under TLS or over another stream: chunks go as messages.
    A data link carries one transfer at a time and its holder sends nothing unasked, so between
    transfers nothing waits in the link's own buffer, and its chunks may be read past it."""
    stream = conn.stream
    return stream if conn.tls is None and type(stream) is trio.SocketStream else None


def unix_socket(conn: Connection) -> trio.socket.SocketType | None:
    """The trio socket under a plain data link on a Unix socket (where descriptors may pass), else None."""
    stream = raw_stream(conn)
    return stream.socket if stream is not None and stream.socket.family == socket.AF_UNIX else None


def describe(ref: ValueRef) -> str:
    """A value's name in an error: its size, key prefix and holder."""
    where = f"node monitor {clip(ref.node_id)} ({clip(ref.address)})"
    return f"the value {ref.key[:4].hex()}... ({ref.size:,} bytes) at {where}"


class DataLinks:
    """The data links of one client or node monitor (`role`, `peer_id`) to the holders of values, made
    under `link` (its credentials, handshake deadline and frame limit)."""

    def __init__(
        self,
        *,
        link: LinkConfig,
        role: str,
        peer_id: str,
        max_value: int = DEFAULT_MAX_VALUE,
        stall_timeout: float = STALL_TIMEOUT,
        shared_over: int = 0,
        copies: int = 0,
    ) -> None:
        self._connect: dict[str, Any] = {"link": link, "role": role, "peer_id": peer_id}
        self.max_value = max_value
        self.stall_timeout = stall_timeout
        self.shared_over = shared_over  # a value over this many bytes comes into a memory file (0: none do)
        self.fetched = 0  # values fetched
        self.bytes_fetched = 0
        self.fetched_files = 0  # of them, memory files passed by a holder on this host (FetchFile)
        self._idle: dict[str, list[Connection]] = {}
        self._limits: dict[str, trio.Semaphore] = {}
        self._closed = False
        # copies of fetched values kept for later tasks (a node monitor's; 0 bytes: none), and transfers under way
        self.copies = Copies(copies) if copies > 0 else None
        self._pending: dict[tuple[str, bytes, str | None], _Pending] = {}
        self._scratch: list[bytearray] = []  # spare buffers: a fresh one per chunk costs its page faults

    async def fetch(self, ref: ValueRef, user: str | None = None) -> bytearray | SharedValue:
        """The value `ref` names: a copy kept here, the answer of a transfer of it under way, or from its
        holder. `user`: a node monitor's, under TLS: the user of the task it is for, whose value it must be
        (FetchValue.user). Raises ValueLost (module docstring)."""
        copies = self.copies
        if copies is None:
            return await self._fetch(ref, user)
        name = (ref.address, ref.key, user)
        while True:
            copy = copies.get(ref.address, ref.key, ref.size, trio.current_time(), user)
            if copy is not None:
                return copy
            pending = self._pending.get(name)
            if pending is None:
                break
            await pending.done.wait()
            if pending.lost is not None:
                raise ValueLost(pending.lost)
            if type(pending.value) is SharedValue and len(pending.value) == ref.size:
                return pending.value  # read-only: tasks may share it (a bytearray they might change is not shared)
            # its fetcher was cancelled (or its value may not be shared): fetch it here
        pending = self._pending[name] = _Pending()
        try:
            value = pending.value = await self._fetch(ref, user)
        except ValueLost as exc:
            pending.lost = str(exc)
            raise
        finally:
            del self._pending[name]
            pending.done.set()
        copies.put(ref.address, ref.key, value, trio.current_time(), user)
        return value

    def expire_copies(self) -> None:
        """Drop the copies no task took for their idle time (copies.py); a node monitor's timer calls this."""
        if self.copies is not None:
            self.copies.expire(trio.current_time())

    async def _fetch(self, ref: ValueRef, user: str | None = None) -> bytearray | SharedValue:
        """The value `ref` names, from its holder (for `user`'s tasks: see `fetch`)."""
        limit = self._limits.get(ref.address)
        if limit is None:
            limit = self._limits[ref.address] = trio.Semaphore(LINKS_PER_HOLDER)
        async with limit:
            for attempt in (0, 1):
                conn, reused = await self._link(ref)
                try:
                    value = await self._ask(conn, ref, user)
                except ConnectionLost as exc:
                    await conn.aclose()
                    if reused and attempt == 0:
                        continue  # closed while idle: once more on a fresh link
                    raise ValueLost(f"{describe(ref)} is lost: {exc}") from None
                except BaseException:
                    await conn.aclose()
                    raise
                await self._keep(ref.address, conn)
                self.fetched += 1
                self.bytes_fetched += len(value)
                return value
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def release(self, refs: Iterable[ValueRef]) -> None:
        """Tell each holder that these values are no longer needed; a holder that cannot be reached has
        lost them anyway."""
        by_address: dict[str, list[ValueRef]] = {}
        for ref in refs:
            by_address.setdefault(ref.address, []).append(ref)
        for some in by_address.values():
            keys = [ref.key for ref in some]
            try:
                conn, _ = await self._link(some[0])
            except ValueLost:
                continue
            try:
                with trio.fail_after(self.stall_timeout):
                    for start in range(0, len(keys), MAX_RELEASE_KEYS):
                        await conn.send_now([ReleaseValues(keys[start : start + MAX_RELEASE_KEYS])])
            except (ConnectionLost, trio.TooSlowError):
                await conn.aclose()
                continue
            except BaseException:  # cancelled: the client is closing
                await conn.aclose()
                raise
            await self._keep(some[0].address, conn)

    async def _keep(self, address: str, conn: Connection) -> None:
        """Keep `conn` idle for the next exchange with `address`, or close it if these links are closed
        (`aclose` ran while it was in use: nobody else would)."""
        if self._closed:
            await conn.aclose()
        else:
            self._idle.setdefault(address, []).append(conn)

    async def aclose(self) -> None:
        self._closed = True
        if self.copies is not None:
            self.copies.clear()
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                await conn.aclose()

    async def _link(self, ref: ValueRef) -> tuple[Connection, bool]:
        """An open link to `ref`'s holder and whether it was reused."""
        idle = self._idle.get(ref.address)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn, True
        try:
            address = parse_address(ref.address)
            return await connect(address, **self._connect), False
        except (OSError, ValueError, HandshakeError) as exc:
            raise ValueLost(f"{describe(ref)} is lost: cannot reach its node monitor: {exc}") from None

    async def _ask(self, conn: Connection, ref: ValueRef, user: str | None) -> bytearray | SharedValue:
        """Fetch `ref` over `conn`; ValueLost for a missing value, a stall or a broken transfer (the
        link is closed), ConnectionLost if the link ends."""
        try:
            assembler = Assembler(
                ref.size,
                frame_limit=conn.max_frame,
                max_value=self.max_value,
                name=describe(ref),
                shared=0 < self.shared_over < ref.size,
            )
        except ProtocolError as exc:
            raise ValueLost(str(exc)) from None
        unix = unix_socket(conn) if assembler.shared else None
        try:
            with trio.fail_after(self.stall_timeout):
                await conn.send_now([FetchFile(ref.key, user) if unix is not None else FetchValue(ref.key, user)])
            if unix is not None:
                first = await self._receive_file_answer(unix, conn, ref)
                if type(first) is SharedValue:
                    return first
                if type(first) is Error:
                    raise ValueLost(f"{describe(ref)} is lost: its holder refused: {clip(first.reason)}")
                if assembler.feed(first):
                    return self._assembled(assembler, ref)
            stream = raw_stream(conn)
            if stream is not None:
                await self._receive_raw(stream, conn, assembler, ref)
            done = stream is not None
            while not done:
                with trio.fail_after(self.stall_timeout):
                    batch = await conn.receive_batch()
                for i, msg in enumerate(batch):
                    if type(msg) is Error:
                        raise ValueLost(f"{describe(ref)} is lost: its holder refused: {clip(msg.reason)}")
                    done = assembler.feed(msg)
                    if done and i != len(batch) - 1:
                        raise ProtocolError(f"{describe(ref)}: {len(batch) - i - 1} messages after the transfer's end")
        except trio.TooSlowError:
            await conn.aclose()
            raise ValueLost(
                f"{describe(ref)} is lost: the transfer stalled ({assembler.got:,} of {ref.size:,} bytes came, then "
                f"nothing for {self.stall_timeout:g} s)"
            ) from None
        except ProtocolError as exc:
            await conn.aclose()
            raise ValueLost(f"{describe(ref)} is lost: its holder broke the protocol: {exc}") from None
        return self._assembled(assembler, ref)

    @staticmethod
    def _assembled(assembler: Assembler, ref: ValueRef) -> bytearray | SharedValue:
        if assembler.missing is not None:
            raise ValueLost(f"{describe(ref)} is lost: {clip(assembler.missing)}")
        return assembler.value()

    async def _receive_file_answer(self, sock: trio.socket.SocketType, conn: Connection, ref: ValueRef) -> Any:
        """The first message of the answer to FetchFile: the value itself if it is ValueFile (its memory file
        adopted: shared.adopt's checks, and the reference's size), else the message (a header, ValueMissing,
        Error), any descriptor that came with it closed. Raises TransferError for a ValueFile without exactly
        one descriptor or whose file is not the value."""
        fds: list[int] = []
        try:
            head = bytearray(HEADER_SIZE)
            await self._fill_fds(sock, memoryview(head), conn, fds)
            size = int.from_bytes(head, "big")
            if size > SMALL_FRAME:
                raise TransferError(f"{describe(ref)}: a first frame of {size:,} bytes")
            frame = bytearray(size)
            await self._fill_fds(sock, memoryview(frame), conn, fds)
            try:
                msg = _decoder.decode(frame)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ProtocolError(describe_invalid(memoryview(frame), exc)) from None
            if type(msg) is not ValueFile:
                return msg
            if len(fds) != 1:
                raise TransferError(f"{describe(ref)}: ValueFile came with {len(fds)} descriptors, not 1")
            if msg.size != ref.size:
                raise TransferError(f"{describe(ref)}: the holder announced {msg.size:,} bytes")
            fd = fds.pop()
            try:
                size = os.fstat(fd).st_size
                if size != ref.size:
                    os.close(fd)
                    raise TransferError(f"{describe(ref)}: its memory file holds {size:,} bytes")
                value = adopt(fd, ref.size)  # closes fd on an error
            except (ValueError, OSError) as exc:
                raise TransferError(f"{describe(ref)}: its memory file was refused: {exc}") from None
            self.fetched_files += 1
            return value
        finally:
            for fd in fds:
                os.close(fd)

    async def _fill_fds(self, sock: trio.socket.SocketType, view: memoryview, conn: Connection, fds: list[int]) -> None:
        """Receive exactly len(view) bytes into `view`, each receive within `stall_timeout`, and the
        descriptors that come with them into `fds` (at most FILES_PER_ANSWER are taken; the kernel closes more)."""
        room = socket.CMSG_SPACE(FILES_PER_ANSWER * array.array("i").itemsize)
        while view:
            try:
                with trio.fail_after(self.stall_timeout):
                    got, ancillary, _, _ = await sock.recvmsg_into([view], room)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise ConnectionLost(f"connection to {conn.peer_name} lost: {exc}") from None
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    taken = array.array("i")
                    taken.frombytes(data[: len(data) - len(data) % taken.itemsize])
                    fds.extend(taken)
            if not got:
                raise ConnectionLost(f"{conn.peer_name} closed the connection")
            view = view[got:]

    async def _receive_raw(
        self, stream: trio.SocketStream, conn: Connection, assembler: Assembler, ref: ValueRef
    ) -> None:
        """Read the answer from the socket itself (raw_stream): a small frame is decoded as a message; the
        frame of the chunk due next is checked against the prefix it must have (chunk_prefix), and its data
        received in its place (or, for a memory file, into a scratch buffer written to it)."""
        sock = stream.socket
        head = bytearray(HEADER_SIZE)
        scratch: list[bytearray] = []  # taken from the spares when a chunk goes to a memory file
        try:
            await self._read_answer(sock, head, scratch, conn, assembler, ref)
        finally:
            if scratch and len(self._scratch) < SPARE_SCRATCH:
                self._scratch.append(scratch[0])

    async def _read_answer(
        self,
        sock: trio.socket.SocketType,
        head: bytearray,
        scratch: list,
        conn: Connection,
        assembler: Assembler,
        ref: ValueRef,
    ) -> None:
        while True:
            await self._fill(sock, memoryview(head), conn)
            size = int.from_bytes(head, "big")
            due = assembler.due
            if due and size > SMALL_FRAME:
                prefix = chunk_prefix(assembler.next, due)
                if size != len(prefix) - HEADER_SIZE + due:
                    raise TransferError(
                        f"{describe(ref)}: a frame of {size:,} bytes, expected chunk {assembler.next} of {due:,} bytes"
                    )
                got = bytearray(len(prefix) - HEADER_SIZE)
                await self._fill(sock, memoryview(got), conn)
                if got != prefix[HEADER_SIZE:]:
                    raise TransferError(f"{describe(ref)}: a frame that is not chunk {assembler.next} of {due:,} bytes")
                target = assembler.target()
                if target is None:
                    if not scratch:  # a fresh buffer's page faults cost about as much as its copy
                        scratch.append(self._scratch.pop() if self._scratch else bytearray(CHUNK_SIZE))
                    buffer = scratch[0] if due <= CHUNK_SIZE else bytearray(due)  # over it: a hostile holder's
                    target = memoryview(buffer)[:due]
                await self._fill(sock, target, conn)
                if assembler.put(target):
                    return
                continue
            if size > SMALL_FRAME:
                raise TransferError(f"{describe(ref)}: a frame of {size:,} bytes where no chunk was due")
            frame = bytearray(size)
            await self._fill(sock, memoryview(frame), conn)
            try:
                msg = _decoder.decode(frame)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ProtocolError(describe_invalid(memoryview(frame), exc)) from None
            if type(msg) is Error:
                raise ValueLost(f"{describe(ref)} is lost: its holder refused: {clip(msg.reason)}")
            if assembler.feed(msg):
                return

    async def _fill(self, sock: trio.socket.SocketType, view: memoryview, conn: Connection) -> None:
        """Receive exactly len(view) bytes into `view`, each receive within `stall_timeout`."""
        while view:
            try:
                with trio.fail_after(self.stall_timeout):
                    got = await sock.recv_into(view)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise ConnectionLost(f"connection to {conn.peer_name} lost: {exc}") from None
            if not got:
                raise ConnectionLost(f"{conn.peer_name} closed the connection")
            view = view[got:]


class _Pending:
    """A transfer under way that other fetches of the same value wait for: its value, or why it was lost."""

    __slots__ = ("done", "lost", "value")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value: bytearray | SharedValue | None = None
        self.lost: str | None = None
