"""The trio shell around one framed connection: handshake, batched reads, one write per burst.

`accept` (server side) and `connect` (client side) run the authenticated handshake of auth.py and
return a `Connection`. `Connection.send` / `send_many` are synchronous, so sans-I/O logic can emit
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
the connection is closed; only this connection is affected. Every wait has a deadline: the handshake,
the flush of a final Error, and (optionally) an idle timeout on reads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterable

import trio

from . import auth
from .address import Address, format_address
from .errors import ConnectionLost, HandshakeError, ProtocolError
from .framing import DEFAULT_MAX_FRAME, RECEIVE_SIZE, FrameDecoder, encode_frames
from .messages import PROTOCOL_VERSION, Authenticate, Challenge, Error, Welcome

logger = logging.getLogger("sparrow_runtime.connection")

DEFAULT_HANDSHAKE_TIMEOUT = 5.0
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


# -- handshake ------------------------------------------------------------------------------------


async def accept(
    stream: trio.abc.Stream,
    *,
    secret: bytes,
    role: str,
    node_id: str,
    allowed_roles: Iterable[str],
    timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
    peer_name: str = "peer",
) -> Connection:
    """Server side of the handshake. Returns the authenticated connection.

    Error handling: a peer that sends garbage, another version, a role not in `allowed_roles`, a
    wrong MAC, or does not finish within `timeout` seconds gets Error(reason), is closed, and
    HandshakeError(reason) is raised. The reason is logged; the secret and MACs never are.
    """
    conn = Connection(stream, max_frame=max_frame, peer_name=peer_name)
    nonce = auth.new_nonce()
    reason = f"handshake not completed within {timeout} s"
    with trio.move_on_after(timeout):
        try:
            await conn.send_now([Challenge(PROTOCOL_VERSION, role, node_id, nonce)])
            msg = await conn.receive_one()
            reason = _check_authenticate(msg, secret, nonce, role, node_id, set(allowed_roles))
            if reason is None:
                conn.peer_role, conn.peer_id = msg.role, msg.peer_id
                mac = auth.proof(
                    secret, "server", msg.nonce, PROTOCOL_VERSION, role, node_id, msg.role, msg.peer_id
                )
                await conn.send_now([Welcome(mac)])
                return conn
        except ProtocolError as exc:
            reason = str(exc)
        except ConnectionLost as exc:
            reason = str(exc)
    logger.warning("refused connection from %s: %s", peer_name, reason)
    with trio.move_on_after(CLOSE_TIMEOUT):
        try:
            await conn.send_now([Error(f"refused: {reason}")])
        except ConnectionLost:
            pass
    await conn.aclose()
    raise HandshakeError(reason)


def _check_authenticate(msg, secret, nonce, role, node_id, allowed_roles) -> str | None:
    """None if `msg` is a valid Authenticate for this server, else the reason to refuse."""
    if not isinstance(msg, Authenticate):
        return f"expected Authenticate, got {type(msg).__name__}"
    if msg.version != PROTOCOL_VERSION:
        return f"protocol version mismatch: peer speaks {msg.version}, this {role} speaks {PROTOCOL_VERSION}"
    if msg.role not in allowed_roles:
        return f"a {msg.role!r} may not connect to a {role} (allowed: {', '.join(sorted(allowed_roles))})"
    expected = auth.proof(secret, "client", nonce, PROTOCOL_VERSION, msg.role, msg.peer_id, role, node_id)
    if not auth.verify(expected, msg.mac):
        return f"authentication failed for {msg.role} {msg.peer_id!r}: it does not know the cluster secret"
    if len(msg.nonce) != auth.NONCE_SIZE:
        return f"client nonce must be {auth.NONCE_SIZE} bytes, got {len(msg.nonce)}"
    return None


async def connect(
    address: Address,
    *,
    secret: bytes,
    role: str,
    peer_id: str,
    timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
) -> Connection:
    """Open a TCP connection to `address` and run the client side of the handshake.

    Error handling: OSError if nothing listens there; HandshakeError if the server refuses us (its
    reason is in the message), speaks another version, cannot prove it knows the secret, or the
    whole exchange takes longer than `timeout` seconds.
    """
    name = format_address(address)
    with trio.move_on_after(timeout) as scope:
        stream = await trio.open_tcp_stream(*address)
    if scope.cancelled_caught:
        raise HandshakeError(f"could not connect to {name} within {timeout} s")
    return await connect_stream(
        stream, secret=secret, role=role, peer_id=peer_id, timeout=timeout, max_frame=max_frame, peer_name=name
    )


async def connect_stream(
    stream: trio.abc.Stream,
    *,
    secret: bytes,
    role: str,
    peer_id: str,
    timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
    peer_name: str = "peer",
) -> Connection:
    """The client side of the handshake over an open `stream` (see `connect`); closes it on failure."""
    conn = Connection(stream, max_frame=max_frame, peer_name=peer_name)
    with trio.move_on_after(timeout):
        try:
            await _client_handshake(conn, secret, role, peer_id, peer_name)
        except BaseException:
            await conn.aclose()
            raise
        return conn
    await conn.aclose()
    raise HandshakeError(f"handshake with {peer_name} not completed within {timeout} s")


async def _client_handshake(conn: Connection, secret: bytes, role: str, peer_id: str, name: str) -> None:
    try:
        challenge = await conn.receive_one()
        if isinstance(challenge, Error):
            raise HandshakeError(f"{name} refused the connection: {challenge.reason}")
        if not isinstance(challenge, Challenge):
            raise HandshakeError(f"{name} sent {type(challenge).__name__} instead of a Challenge")
        if challenge.version != PROTOCOL_VERSION:
            raise HandshakeError(
                f"{name} speaks protocol version {challenge.version}, this {role} speaks {PROTOCOL_VERSION}"
            )
        server_role, server_id = challenge.role, challenge.peer_id
        nonce = auth.new_nonce()
        mac = auth.proof(
            secret, "client", challenge.nonce, PROTOCOL_VERSION, role, peer_id, server_role, server_id
        )
        await conn.send_now([Authenticate(PROTOCOL_VERSION, role, peer_id, mac, nonce)])
        reply = await conn.receive_one()
    except ConnectionLost as exc:
        raise HandshakeError(f"{name} closed the connection during the handshake ({exc})") from None
    if isinstance(reply, Error):
        raise HandshakeError(f"{name} refused the connection: {reply.reason}")
    if not isinstance(reply, Welcome):
        raise HandshakeError(f"{name} sent {type(reply).__name__} instead of Welcome")
    expected = auth.proof(secret, "server", nonce, PROTOCOL_VERSION, server_role, server_id, role, peer_id)
    if not auth.verify(expected, reply.mac):
        raise HandshakeError(f"{name} did not prove it knows the cluster secret")
    conn.peer_role, conn.peer_id = server_role, server_id


async def keep_connected(
    address: Address,
    serve: Callable[[Connection], Awaitable[None]],
    *,
    secret: bytes,
    role: str,
    peer_id: str,
    timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
    redial_delay: float = 0.5,
) -> None:
    """Connect to `address` and `await serve(conn)`; whenever the connection fails or ends, wait
    `redial_delay` seconds and do it again, until cancelled. Failures to connect are logged."""
    while True:
        try:
            conn = await connect(address, secret=secret, role=role, peer_id=peer_id, timeout=timeout, max_frame=max_frame)
        except (OSError, HandshakeError) as exc:
            logger.warning("cannot reach %s: %s", format_address(address), exc)
        else:
            await serve(conn)
        await trio.sleep(redial_delay)
