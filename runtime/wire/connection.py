"""The trio shell around one framed connection: batched reads, one write per burst.

A `Connection` is made by the handshake (handshake.py). `Connection.send` / `send_many` are synchronous,
so sans-I/O logic can emit messages freely; `send_grouped` sends a list of `(connection, message)` pairs
with one write per connection. `Connection.serve` delivers each batch of received messages to a callback until the
peer goes away.

Fast path (socket streams): per-wake-up overhead, not bytes, is what a message costs here, so a
connection over a `trio.SocketStream` writes a burst straight to the non-blocking socket from
`send_many` (one `os.write`, no task switch), and reads with `trio.lowlevel.wait_readable` + `os.read`
(no extra scheduler pass per read). Whatever a direct write could not send, and everything
queued while that remainder is pending, is written by the connection's sender task in order. Other
streams (trio memory streams in tests) always go through the sender task and `receive_some`.

TLS (`tls`, a tls_channel.TLSChannel whose handshake is done over `stream`): the same paths, on
ciphertext. A burst is encrypted where it is queued (so records leave in the order they were made),
and each read is decrypted as it comes; backpressure and the memory bound count encrypted bytes.

Backpressure: a peer that does not read is judged by its progress, not by a byte count at one
instant: it is dropped once it accepts no byte for `stall_timeout` seconds while bytes wait for it.
A link is full while more than LINK_FULL bytes wait; a sender that can wait uses `send_later`
(messages kept unencoded, in order, until the link has room) and `wait_room`. What a connection
holds encoded is bounded all the same (`unsent_limit`, limits.py): past it the peer is dropped.

Error handling: a ProtocolError raised while reading (oversized frame, undecodable bytes) or by the
callback (a message not allowed in the connection's state) is answered with an Error message, then
the connection is closed; only this connection is affected. Every wait has a deadline: the flush
of a final Error, and (optionally) an idle timeout on reads, under the pause-aware rule of
liveness.py (a pause of this process does not count as the peer's silence).
"""

from __future__ import annotations

import logging
import math
import os
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from ..errors import ConnectionLost, ProtocolError
from . import limits
from .framing import DEFAULT_MAX_FRAME, RECEIVE_SIZE, FrameDecoder, encode_frames
from .liveness import Liveness
from .messages import Error, Message, RegistrationRefused

if TYPE_CHECKING:
    from .tls import Identity
    from .tls_channel import TLSChannel

logger = logging.getLogger(__name__)

FAREWELLS = (Error, RegistrationRefused)  # messages after which their sender closes the connection
CLOSE_TIMEOUT = 1.0  # how long a final Error may take to flush before the connection is dropped
BIG_RECEIVE_SIZE = 4 * 1024 * 1024  # bytes asked of one read while a big frame is coming
WRITE_CHUNK = 1024 * 1024  # bytes per write on a stream that is not a socket (progress is seen per chunk)
_DIRECT_IO = os.name == "posix"  # os.read/os.write on a socket's descriptor (not on Windows sockets)


class Connection:
    """A message connection over a trio stream; `peer_role`/`peer_id` (and `identity` under TLS) are
    set by the handshake.

    Until `handshake_done()` (called by handshake.py once the peer is authenticated), frames over
    HANDSHAKE_MAX_FRAME are refused at their length prefix; `handshake=False` (a private socket
    pair, no handshake) starts at `max_frame`. A peer that accepts no byte for `stall_timeout`
    seconds while bytes wait for it, or lets more than `unsent_limit` bytes pile up encoded, does not
    read and is dropped: `serve` returns that reason. `active_at` is when the peer was last seen
    at work between messages: a read brought part of a frame, or the peer drained our socket's full
    buffer (a big frame on its way, either way, is a peer that is heard from)."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        peer_name: str = "peer",
        handshake: bool = True,
        unsent_limit: int | None = None,
        stall_timeout: float = limits.STALL_TIMEOUT,
        tls: TLSChannel | None = None,
    ) -> None:
        self.stream = stream
        self.tls = tls
        self.max_frame = max_frame
        self.send_limit = max_frame  # the smaller of both sides' max_frame, once the peer told its own
        self.unsent_limit = limits.unsent_limit(max_frame) if unsent_limit is None else unsent_limit
        self.stall_timeout = stall_timeout
        self.active_at = -math.inf
        self.peer_name = peer_name
        self.peer_role = ""
        self.peer_id = ""
        self.identity: Identity | None = (
            None  # under TLS, the peer's certificate's (tls.Identity), set by the handshake
        )
        self.closed = False
        self._decoder = FrameDecoder(min(max_frame, limits.HANDSHAKE_MAX_FRAME) if handshake else max_frame)
        self._pending: list = []
        self._outbox = bytearray()  # encoded frames waiting for the sender task
        self._wake = trio.Event()
        self._closing = False
        self._fd = stream.socket.fileno() if _DIRECT_IO and type(stream) is trio.SocketStream else None
        self._unsent: bytes | memoryview = b""  # the tail of a direct write that did not fit; the sender task writes it
        self._writing = False  # the sender task is writing: direct writes must queue behind it
        self._in_flight = 0  # bytes of the sender task's current write not yet accepted by the peer
        self._progress_at = 0.0  # when the peer last accepted bytes (or bytes began to wait)
        self._later: deque[Sequence] = deque()  # bursts of send_later waiting for room, unencoded
        self._room: trio.Event | None = None  # set when the link has room again (wait_room)
        self._dropped: str | None = None  # why the connection was dropped without a goodbye
        self._goodbye: str | None = None  # the reason of the peer's Error, once it came
        self._farewell: str | None = None  # the reason of the Error we sent, once we did
        self._scope: trio.CancelScope | None = None  # serve's, cancelled to drop the connection

    def __repr__(self) -> str:
        return f"<Connection {self.peer_role} {limits.clip(self.peer_id, 60)!r} at {self.peer_name}>"

    def handshake_done(self, peer_max_frame: int = 0) -> None:
        """The peer is authenticated: accept frames up to `max_frame` from now on, and send none over
        `peer_max_frame`, the peer's own limit (0: not told)."""
        self._decoder.max_frame = self.max_frame
        if peer_max_frame:
            self.send_limit = min(self.max_frame, peer_max_frame)

    # -- sending ----------------------------------------------------------------------------------

    def send(self, msg: Message) -> None:
        """Send `msg` (dropped if the connection is closed or closing)."""
        self.send_many((msg,))

    def send_many(self, msgs: Sequence) -> None:
        """Send `msgs` as one burst: written at once on a socket when nothing is pending before them,
        else queued for the sender task (dropped if the connection is closed or closing). An Error
        among them closes the connection after it is sent (the protocol's rule)."""
        if self._closing:
            return
        data: bytes | bytearray
        try:
            data = encode_frames(msgs, self.send_limit)
        except ProtocolError:
            logger.exception("could not encode a message for %s; closing the connection", self)
            self.close_soon()
            return
        if self.tls is not None:
            try:
                data = self.tls.encrypt(data)
            except ssl.SSLError:  # the session broke (a bad record came): the receiving side reports it
                self.close_soon()
                return
        self._send_bytes(data)
        for msg in msgs:
            if type(msg) in FAREWELLS:  # our goodbye: the sender task flushes, then closes
                self._farewell = msg.reason
                self._closing = True
                self._wake.set()

    def _send_bytes(self, data: bytes | bytearray) -> None:
        """Write `data` (encoded, encrypted under TLS) at once if nothing is pending before it, else
        queue it for the sender task."""
        if self._fd is None or self._outbox or self._unsent or self._writing:
            self._queue(data)
        else:
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
                self._check_unsent()

    def send_later(self, msgs: Sequence) -> None:
        """Send `msgs` as one burst once the link has room: at once if it has, else kept unencoded
        (no copy of their payloads) until the bytes before them drop to LINK_FULL. Bursts of
        send_later keep their order; `send` and `send_many` may overtake them (heartbeats do)."""
        if self._later or not self.has_room:
            if not self._closing:
                self._later.append(msgs)
                self._wake.set()
        else:
            self.send_many(msgs)

    @property
    def unsent(self) -> int:
        """Bytes encoded for the peer that it has not accepted yet."""
        return len(self._outbox) + len(self._unsent) + self._in_flight

    @property
    def has_room(self) -> bool:
        """No send_later burst waits and at most LINK_FULL bytes are unsent."""
        return not self._later and self.unsent <= limits.LINK_FULL

    async def wait_room(self) -> None:
        """Wait until the link has room (`has_room`) or is closing: a sender's backpressure."""
        while not self.has_room and not self._closing:
            if self._room is None:
                self._room = trio.Event()
            await self._room.wait()

    def _wake_room(self) -> None:
        if self._room is not None and (self._closing or self.has_room):
            self._room.set()
            self._room = None

    def _queue(self, data: bytes | bytearray) -> None:
        self._outbox += data
        self._wake.set()
        self._check_unsent()

    def _check_unsent(self) -> None:
        """The memory bound: a peer with more than `unsent_limit` bytes waiting is dropped."""
        unsent = self.unsent
        if unsent > self.unsent_limit:
            self.drop(f"{unsent} bytes unsent, over the limit of {self.unsent_limit}: the peer does not read")

    def drop(self, reason: str) -> None:
        """Drop the connection now, without flushing what is queued (a peer that does not read);
        `serve` returns `reason`."""
        if self._dropped is not None:
            return
        self._dropped = reason
        self._closing = True
        self._outbox = bytearray()
        self._unsent = b""
        self._later.clear()
        self._wake_room()
        if self._scope is not None:
            self._scope.cancel()

    def close_soon(self, reason: str | None = None) -> None:
        """Send Error(reason) if given, flush what is queued, then close."""
        if reason is not None:
            self.send(Error(limits.clip(reason, limits.MAX_REASON)))
        self._closing = True
        self._wake.set()
        self._wake_room()

    async def send_now(self, msgs: list) -> None:
        """Write `msgs` directly; only before `serve` started (the handshake)."""
        data = encode_frames(msgs, self.send_limit)
        try:
            await self.stream.send_all(data if self.tls is None else self.tls.encrypt(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
            raise ConnectionLost(f"connection to {self.peer_name} lost: {exc}") from None

    async def _send_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                self._progress_at = trio.current_time()  # bytes wait from now
                while True:  # a direct write's tail first, then what queued behind it, then send_later's
                    data: bytes | memoryview | bytearray
                    if self._unsent:
                        data, self._unsent = self._unsent, b""
                    elif self._outbox:
                        data, self._outbox = self._outbox, bytearray()
                    elif self._later:
                        self._encode_later()
                        continue
                    else:
                        break
                    self._writing = True
                    if self._closing:
                        with trio.move_on_after(CLOSE_TIMEOUT):
                            await self._write(data)
                    else:
                        await self._write(data)
                    self._writing = False
                    self._wake_room()
                if self._closing:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._closing = True
            self._wake_room()
            await self.aclose()

    def _encode_later(self) -> None:
        """Encode send_later's bursts into the outbox, in order, until it holds more than LINK_FULL."""
        while self._later and len(self._outbox) <= limits.LINK_FULL:
            msgs = self._later.popleft()
            try:
                data = encode_frames(msgs, self.send_limit)
            except ProtocolError:
                logger.exception("could not encode a message for %s; closing the connection", self)
                self._later.clear()
                self.close_soon()
                return
            try:
                self._outbox += data if self.tls is None else self.tls.encrypt(data)
            except ssl.SSLError:  # the session broke (a bad record came): the receiving side reports it
                self._later.clear()
                self.close_soon()
                return
            for msg in msgs:
                if type(msg) in FAREWELLS:
                    self._farewell = msg.reason
                    self._closing = True

    async def _write(self, data: bytes | bytearray | memoryview) -> None:
        """Write `data` (the sender task), noting each time the peer accepts bytes; drop the peer
        when it accepts none for `stall_timeout` seconds."""
        view = memoryview(data)
        self._in_flight = len(view)
        try:
            while view:
                with trio.move_on_at(self._progress_at + self.stall_timeout):
                    sent = await self._write_some(view)
                    view = view[sent:]
                    self._in_flight = len(view)
                    self._progress_at = trio.current_time()
                    self._wake_room()
                    continue
                self.drop(
                    f"it accepted no byte for {self.stall_timeout:g} s while {self.unsent} bytes waited for it: "
                    "the peer does not read"
                )
                await trio.lowlevel.checkpoint()  # drop cancelled serve: this raises Cancelled
        finally:
            self._in_flight = 0

    async def _write_some(self, view: memoryview) -> int:
        """Write some of `view` once the stream takes it; how many bytes were written."""
        if self._fd is None:
            chunk = view[:WRITE_CHUNK]
            await self.stream.send_all(chunk)
            return len(chunk)
        waited = False
        while True:
            if self.closed:  # its descriptor may already belong to another file
                raise trio.ClosedResourceError("the connection was closed")
            try:
                sent = os.write(self._fd, view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self._fd)
                waited = True
                continue
            except OSError as exc:
                raise trio.BrokenResourceError(str(exc)) from None
            if waited:  # the socket's buffer was full and has room again: the peer read from it
                self.active_at = trio.current_time()
            await trio.lowlevel.cancel_shielded_checkpoint()
            return sent

    # -- receiving --------------------------------------------------------------------------------

    async def receive_batch(self) -> list:
        """Every message that is complete after one or more reads (at least one message).

        On a socket, each read waits until it is readable first (a read right after handling a batch
        nearly always finds nothing: waiting first saves a failed read per message), and asks for the
        rest of a big frame at once once its size is known (up to BIG_RECEIVE_SIZE)."""
        if self._pending:
            batch, self._pending = self._pending, []
            return batch
        decoder = self._decoder
        decoder.raise_error()
        tls = self.tls
        fd = self._fd
        data: bytes | bytearray
        while True:
            if tls is not None and tls.buffered:  # ciphertext that came with the TLS handshake's last read
                data = self._decrypt(tls, b"")
            else:
                try:
                    if fd is None:
                        data = await self.stream.receive_some(RECEIVE_SIZE)
                    else:
                        while True:
                            if self.closed:  # its descriptor may already belong to another file
                                raise trio.ClosedResourceError("the connection was closed")
                            await trio.lowlevel.wait_readable(fd)  # raises if the socket is closed meanwhile
                            missing = decoder.missing
                            try:
                                data = os.read(
                                    fd, RECEIVE_SIZE if missing <= RECEIVE_SIZE else min(missing, BIG_RECEIVE_SIZE)
                                )
                                break
                            except BlockingIOError:
                                pass
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    raise ConnectionLost(f"connection to {self.peer_name} lost: {_why(exc)}") from None
                if not data:
                    raise ConnectionLost(f"{self.peer_name} closed the connection")
                if tls is not None:
                    data = self._decrypt(tls, data)
            msgs = decoder.feed(data)
            if msgs:
                return msgs
            self.active_at = trio.current_time()  # part of a frame (or of a record): the peer is heard from

    def _decrypt(self, tls: TLSChannel, data: bytes | bytearray) -> bytes:
        """The plaintext of `data` read from the socket; what the TLS layer answers goes out in order."""
        try:
            plain = tls.decrypt(data)
        except ssl.SSLError as exc:
            raise ConnectionLost(f"connection to {self.peer_name} lost: TLS: {exc.reason or exc}") from None
        except EOFError:
            raise ConnectionLost(f"{self.peer_name} closed the connection") from None
        if tls.has_output and not self._closing:
            self._send_bytes(tls.output())
        return plain

    async def receive_one(self) -> Any:  # one of receive_batch()'s: the caller checks its type
        batch = await self.receive_batch()
        msg, self._pending = batch[0], batch[1:]
        return msg

    async def serve(
        self,
        on_messages: Callable[[list], None],
        *,
        idle_timeout: float | None = None,
        on_ended: Callable[[], None] | None = None,
    ) -> str:
        """Run the sender and deliver received batches to `on_messages` until the connection ends.

        Returns why it ended (peer closed, the peer's Error, protocol error, silent past
        `idle_timeout` by the rule of liveness.py, dropped, closed locally). The messages of a batch
        before an Error from the peer are delivered; the Error ends the connection (it is the peer's
        goodbye, not a fault). `on_ended` (optional) is called once nothing more will be delivered,
        before the wait for the sender to flush and close (up to CLOSE_TIMEOUT): a service forgets
        the peer there, so nothing handled meanwhile takes the ended link for live.
        """
        reason = "closed locally"
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            if self._dropped is not None:
                nursery.cancel_scope.cancel()
            nursery.start_soon(self._send_loop)
            try:
                if idle_timeout is None:
                    while not self._closing:
                        self._deliver(on_messages, await self.receive_batch())
                else:
                    await self._serve_until_silent(on_messages, idle_timeout)
                if self._goodbye is not None:
                    reason = self._goodbye
                elif self._farewell is not None:
                    reason = f"closed by this side: {self._farewell}"
                    logger.warning("closing connection to %s: %s", self, self._farewell)
                elif not self._closing:  # idle_timeout passed without a message
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
                if on_ended is not None:
                    on_ended()
        if self._dropped is not None:
            logger.warning("dropped connection to %s: %s", self, self._dropped)
            await self.aclose()
            return self._dropped
        return reason

    def _deliver(self, on_messages: Callable[[list], None], batch: list) -> None:
        """Pass `batch` on, up to an Error from the peer; that Error closes the connection."""
        if Error in map(type, batch):  # rare: a pass in C first
            for i, msg in enumerate(batch):
                if type(msg) is Error:
                    self._goodbye = (
                        f"{self.peer_name} closed the connection: {limits.clip(msg.reason, limits.MAX_REASON)}"
                    )
                    self._closing = True
                    if i:
                        on_messages(batch[:i])
                    return
        on_messages(batch)

    async def _serve_until_silent(self, on_messages: Callable[[list], None], idle_timeout: float) -> None:
        """Deliver batches until closing, or until the peer is silent past `idle_timeout` (Liveness,
        checked when each interval's deadline fires: moving a deadline on every batch costs more
        than the rest of a wake-up)."""
        liveness = Liveness(idle_timeout, trio.current_time())
        while not self._closing:
            asked = trio.current_time() + liveness.interval
            with trio.CancelScope(deadline=asked):
                while not self._closing:
                    batch = await self.receive_batch()
                    liveness.heard = trio.current_time()
                    self._deliver(on_messages, batch)
            liveness.heard = max(liveness.heard, self.active_at)  # a big frame on its way: the peer is heard
            if liveness.silent(trio.current_time(), asked):
                return

    async def aclose(self) -> None:
        self.closed = True
        self._closing = True
        await trio.aclose_forcefully(self.stream)


def _why(exc: BaseException) -> str:
    """What broke a stream, in a few words."""
    return str(exc) or type(exc).__name__


def send_grouped(pairs: list, *, later: bool = False) -> None:
    """Send `(connection, message)` pairs with one write per connection, each connection's messages in
    order. Connections to clients are written last: the messages that keep node monitors busy (the
    critical path of every task) leave before the outcomes a client is waiting for. `later`: each
    connection's burst waits while its link is full (`Connection.send_later`)."""
    if not pairs:
        return
    if len(pairs) == 1:
        peer, msg = pairs[0]
        if later:
            peer.send_later((msg,))
        else:
            peer.send(msg)
        return
    by_peer: dict[Connection, list] = {}
    for peer, msg in pairs:
        msgs = by_peer.get(peer)
        if msgs is None:
            by_peer[peer] = [msg]
        else:
            msgs.append(msg)
    send_bursts(by_peer, later=later)


def send_bursts(by_peer: dict[Connection, list], *, later: bool = False) -> None:
    """Send each connection's messages in `by_peer` as one burst, connections to clients last (as
    send_grouped says); `later`: with `Connection.send_later`."""
    clients = None
    for peer, msgs in by_peer.items():
        if peer.peer_role == "client":
            if clients is None:
                clients = [(peer, msgs)]
            else:
                clients.append((peer, msgs))
        elif later:
            peer.send_later(msgs)
        else:
            peer.send_many(msgs)
    if clients is not None:
        for peer, msgs in clients:
            peer.send_later(msgs) if later else peer.send_many(msgs)
