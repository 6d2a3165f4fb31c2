"""The trio shell around one framed connection: batched reads, one write per burst.

A `Connection` is made by the handshake (handshake.py). `Connection.send` / `send_many` are synchronous, so sans-I/O logic can emit
messages freely; `send_grouped` sends a list of `(connection, message)` pairs with one write per
connection. `Connection.serve` delivers each batch of received messages to a callback until the
peer goes away.

Fast path (socket streams): per-wake-up overhead, not bytes, is what a message costs here, so a
connection over a `trio.SocketStream` writes a burst straight to the non-blocking socket from
`send_many` (one `os.write`, no task switch), and reads with `trio.lowlevel.wait_readable` + `os.read`
(no extra scheduler pass per read). Whatever a direct write could not send, and everything
queued while that remainder is pending, is written by the connection's sender task in order. Other
streams (trio memory streams in tests) always go through the sender task and `receive_some`.

Error handling: a ProtocolError raised while reading (oversized frame, undecodable bytes) or by the
callback (a message not allowed in the connection's state) is answered with an Error message, then
the connection is closed; only this connection is affected. Every wait has a deadline: the flush
of a final Error, and (optionally) an idle timeout on reads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

import trio

from .errors import ConnectionLost, ProtocolError
from .framing import DEFAULT_MAX_FRAME, RECEIVE_SIZE, FrameDecoder, encode_frames
from .messages import Error

logger = logging.getLogger("sparrow_runtime.connection")

CLOSE_TIMEOUT = 1.0  # how long a final Error may take to flush before the connection is dropped
_DIRECT_IO = os.name == "posix"  # os.read/os.write on a socket's descriptor (not on Windows sockets)


class Connection:
    """A message connection over a trio stream; `peer_role`/`peer_id` are set by the handshake."""

    def __init__(
        self, stream: trio.abc.Stream, *, max_frame: int = DEFAULT_MAX_FRAME, peer_name: str = "peer"
    ) -> None:
        self.stream = stream
        self.max_frame = max_frame
        self.peer_name = peer_name
        self.peer_role = ""
        self.peer_id = ""
        self.closed = False
        self._decoder = FrameDecoder(max_frame)
        self._pending: list = []
        self._outbox: list = []
        self._wake = trio.Event()
        self._closing = False
        self._fd = stream.socket.fileno() if _DIRECT_IO and type(stream) is trio.SocketStream else None
        self._unsent = b""  # the tail of a direct write that did not fit; the sender task writes it
        self._writing = False  # the sender task is in send_all: direct writes must queue behind it

    def __repr__(self) -> str:
        return f"<Connection {self.peer_role} {self.peer_id!r} at {self.peer_name}>"

    # -- sending ----------------------------------------------------------------------------------

    def send(self, msg) -> None:
        """Send `msg` (dropped if the connection is closed or closing)."""
        self.send_many((msg,))

    def send_many(self, msgs: Iterable) -> None:
        """Send `msgs` as one burst: written at once on a socket when nothing is pending before them,
        else queued for the sender task (dropped if the connection is closed or closing)."""
        if self._closing:
            return
        if self._fd is None or self._outbox or self._unsent or self._writing:
            self._outbox.extend(msgs)
            self._wake.set()
            return
        try:
            data = encode_frames(msgs, self.max_frame)
        except ProtocolError:
            logger.exception("could not encode a message for %s; closing the connection", self)
            self.close_soon()
            return
        try:
            sent = os.write(self._fd, data)
        except BlockingIOError:
            sent = 0
        except OSError:  # the peer is gone: the receiving side reports it, the sender task closes
            self.close_soon()
            return
        if sent < len(data):
            self._unsent = memoryview(data)[sent:]
            self._wake.set()

    def close_soon(self, reason: str | None = None) -> None:
        """Send Error(reason) if given, flush what is queued, then close."""
        if reason is not None:
            self.send(Error(reason))
        self._closing = True
        self._wake.set()

    async def send_now(self, msgs: list) -> None:
        """Write `msgs` directly; only before `serve` started (the handshake)."""
        try:
            await self.stream.send_all(encode_frames(msgs, self.max_frame))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionLost(f"connection to {self.peer_name} lost: {exc}") from None

    async def _send_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                while self._unsent or self._outbox:  # a direct write's tail first, then what queued behind it
                    if self._unsent:
                        data, self._unsent = self._unsent, b""
                    else:
                        batch, self._outbox = self._outbox, []
                        data = encode_frames(batch, self.max_frame)
                    self._writing = True
                    if self._closing:
                        with trio.move_on_after(CLOSE_TIMEOUT):
                            await self.stream.send_all(data)
                    else:
                        await self.stream.send_all(data)
                    self._writing = False
                if self._closing:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except ProtocolError:
            logger.exception("could not encode a message for %s; closing the connection", self)
        finally:
            self._closing = True
            await self.aclose()

    # -- receiving --------------------------------------------------------------------------------

    async def receive_batch(self) -> list:
        """Every message that is complete after one or more reads (at least one message)."""
        if self._pending:
            batch, self._pending = self._pending, []
            return batch
        self._decoder.raise_error()
        while True:
            try:
                if self._fd is None:
                    data = await self.stream.receive_some(RECEIVE_SIZE)
                else:
                    data = await self._read_socket()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise ConnectionLost(f"connection to {self.peer_name} lost: {exc}") from None
            if not data:
                raise ConnectionLost(f"{self.peer_name} closed the connection")
            msgs = self._decoder.feed(data)
            if msgs:
                return msgs

    async def _read_socket(self) -> bytes:
        """One read of the socket, once it is readable (a read right after handling a batch nearly
        always finds nothing, so waiting first saves a failed read per message)."""
        while True:
            if self.closed:  # its descriptor may already belong to another file
                raise trio.ClosedResourceError("the connection was closed")
            await trio.lowlevel.wait_readable(self._fd)  # raises if the socket is closed meanwhile
            try:
                return os.read(self._fd, RECEIVE_SIZE)
            except BlockingIOError:
                pass

    async def receive_one(self):
        batch = await self.receive_batch()
        msg, self._pending = batch[0], batch[1:]
        return msg

    async def serve(self, on_messages: Callable[[list], None], *, idle_timeout: float | None = None) -> str:
        """Run the sender and deliver received batches to `on_messages` until the connection ends.

        Returns why it ended (peer closed, protocol error, silent past `idle_timeout`, closed locally).
        """
        reason = "closed locally"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._send_loop)
            try:
                if idle_timeout is None:
                    while not self._closing:
                        on_messages(await self.receive_batch())
                else:
                    await self._serve_until_silent(on_messages, idle_timeout)
                    if not self._closing:
                        reason = f"silent for more than {idle_timeout} s"
                        self.close_soon(f"no message for {idle_timeout} s")
            except ProtocolError as exc:
                reason = str(exc)
                logger.warning("closing connection to %s: %s", self, reason)
                self.close_soon(reason)
            except ConnectionLost as exc:
                reason = str(exc)
                self.close_soon()
            finally:
                # the sender flushes what is queued and closes the stream, within CLOSE_TIMEOUT
                self._closing = True
                self._wake.set()
                nursery.cancel_scope.deadline = trio.current_time() + CLOSE_TIMEOUT
        return reason

    async def _serve_until_silent(self, on_messages: Callable[[list], None], idle_timeout: float) -> None:
        """Deliver batches until closing, or until no batch came for `idle_timeout` seconds. The
        deadline is re-armed only when it fires (moving a deadline on every batch costs more than
        the rest of a wake-up)."""
        heard = trio.current_time()
        while not self._closing:
            with trio.CancelScope(deadline=heard + idle_timeout):
                while not self._closing:
                    batch = await self.receive_batch()
                    heard = trio.current_time()
                    on_messages(batch)
            if trio.current_time() >= heard + idle_timeout:
                return

    async def aclose(self) -> None:
        self.closed = True
        self._closing = True
        await trio.aclose_forcefully(self.stream)


def send_grouped(pairs: list) -> None:
    """Send `(connection, message)` pairs with one write per connection, each connection's messages in
    order. Connections to clients are written last: the messages that keep node monitors busy (the
    critical path of every task) leave before the outcomes a client is waiting for."""
    if not pairs:
        return
    if len(pairs) == 1:
        peer, msg = pairs[0]
        peer.send(msg)
        return
    by_peer: dict[Connection, list] = {}
    for peer, msg in pairs:
        msgs = by_peer.get(peer)
        if msgs is None:
            by_peer[peer] = [msg]
        else:
            msgs.append(msg)
    later = []
    for peer, msgs in by_peer.items():
        if peer.peer_role == "client":
            later.append((peer, msgs))
        else:
            peer.send_many(msgs)
    for peer, msgs in later:
        peer.send_many(msgs)
