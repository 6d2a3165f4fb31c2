"""The authenticated handshake that opens every connection (auth.py's proofs over a framed stream).

`accept` (server side) and `connect` / `connect_stream` (client side) exchange Challenge,
Authenticate and Welcome and return a `Connection` (connection.py) whose `peer_role` and `peer_id`
are proven, and whose `send_limit` is the smaller of both sides' max_frame (each tells its own);
`keep_connected` dials an address again whenever its link ends.

Each takes the side's `link` (link_config.LinkConfig: its secret or TLS, the handshake's deadline,
its max_frame). With TLS (`link.tls`, a tls.TLS), the stream is wrapped in TLS first (mutual
authentication with the cluster CA) and the peer's certificate, not the secret, proves who it is: the
role it claims must be the one its certificate allows (tls.CLAIMS), and the connection's `identity` is
that certificate's (its user for a client). Without it, both sides prove they know the cluster secret
(auth.py): the insecure mode, for a single trusted host, since the frames after the handshake are neither encrypted nor
authenticated.

Error handling: a peer that sends garbage, speaks another version, claims a role that may not
connect, does not know the cluster secret, presents no certificate of the cluster CA (or an expired
one), tells a max_frame under the floor (limits.peer_frame_problem: a peer may not make every
message to it "too large"), or is too slow gets Error(reason) (or a TLS alert) and is closed, and
HandshakeError(reason) is raised; the secret and the MACs are never logged.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import trio

from ..errors import ConnectionLost, HandshakeError, ProtocolError, SilentPeer
from . import auth, limits
from .address import Address, format_address, unix_path
from .connection import CLOSE_TIMEOUT, Connection
from .gate import HandshakeGate
from .guard import contained
from .limits import clip
from .link_config import LinkConfig
from .messages import PROTOCOL_VERSION, Authenticate, Challenge, Error, Message, Welcome
from .tls import Identity, TLSFailure, peer_identity, start_tls

logger = logging.getLogger(__name__)

# seconds a peer may send nothing at all (a TLS client's first flight, or the answer to our Challenge): an idle
# connection does not hold its place in the gate for the whole handshake
FIRST_BYTE_TIMEOUT = 1.0
# what a plaintext client adds when its server never answers: most likely a TLS service
TLS_SERVICE_HINT = " (a TLS service? connect with its CA, certificate and key)"


async def accept(
    stream: trio.abc.Stream,
    *,
    link: LinkConfig,
    role: str,
    node_id: str,
    allowed_roles: Iterable[str],
    first_byte_timeout: float = FIRST_BYTE_TIMEOUT,
    peer_name: str = "peer",
    gate: HandshakeGate | None = None,
) -> Connection:
    """Server side of the handshake, under `link` (its secret or TLS, deadline and frame limit). Returns
    the authenticated connection. Until it is done, frames
    over HANDSHAKE_MAX_FRAME are refused at their length prefix; `gate` (optional, one per listener)
    bounds the connections in this state (gate.py: the oldest goes to make room) and how often the
    refusals of one source are logged. A peer that sends nothing within `first_byte_timeout` seconds
    is closed (SilentPeer, counted by the gate, not logged one by one).

    Error handling: a peer that sends garbage, another version, a role not in `allowed_roles`, a
    wrong MAC, or does not finish within `link.handshake_timeout` seconds gets Error(reason), is closed,
    and HandshakeError(reason) is raised. The reason is logged, with what the peer sent cut short; the
    secret and MACs never are.
    """
    args = (stream, link, role, node_id, allowed_roles, first_byte_timeout, peer_name, gate)
    if gate is None:
        return await _accept(*args)
    with gate.admit(stream):
        return await _accept(*args)


async def accept_and_serve(
    stream: trio.abc.Stream,
    serve: Callable[[Connection], Awaitable[None]],
    *,
    log: logging.Logger,
    gate: HandshakeGate,
    **accept_options: Any,
) -> None:
    """A service's handler of one incoming stream: the handshake (`accept` with `accept_options`,
    bounded by `gate`), then `await serve(conn)`. Whatever that raises ends only this connection,
    logged to `log` (guard.py); a refused handshake is logged by `accept`."""
    name = peer_name(stream)
    with contained(log, f"a connection from {name}"):
        try:
            conn = await accept(stream, peer_name=name, gate=gate, **accept_options)
        except HandshakeError:
            return
        await serve(conn)


async def _accept(
    stream: trio.abc.Stream,
    link: LinkConfig,
    role: str,
    node_id: str,
    allowed_roles: Iterable[str],
    first_byte_timeout: float,
    peer_name: str,
    gate: HandshakeGate | None,
) -> Connection:
    secret, tls, max_frame = link.secret, link.tls, link.max_frame
    reason = f"handshake not completed within {link.handshake_timeout} s"  # unless told otherwise below
    conn = None
    with trio.move_on_after(link.handshake_timeout):
        try:
            identity = channel = None
            if tls is not None:
                await _first_byte(stream, first_byte_timeout)
                channel = await start_tls(stream, tls, server_side=True)
                identity = peer_identity(channel)
                if identity is None:
                    raise TLSFailure("TLS: the client's certificate names no sparrow role")
            conn = Connection(stream, max_frame=max_frame, peer_name=peer_name, tls=channel)
            nonce = auth.new_nonce()
            await conn.send_now([Challenge(PROTOCOL_VERSION, role, node_id, nonce, max_frame)])
            if tls is None:
                await _first_byte(stream, first_byte_timeout)
            msg = await conn.receive_one()
            refused = _check_authenticate(msg, link, nonce, role, node_id, set(allowed_roles), identity)
            if refused is not None:
                reason = refused
            else:  # a timeout while welcoming it leaves the timeout as the reason
                conn.peer_role, conn.peer_id, conn.identity = msg.role, msg.peer_id, identity
                if identity is not None:
                    mac = b""
                else:
                    assert secret is not None  # no TLS identity: the cluster secret authenticates (accept's rule)
                    mac = auth.proof(
                        secret, "server", msg.nonce, PROTOCOL_VERSION, role, node_id, msg.role, msg.peer_id
                    )
                await conn.send_now([Welcome(mac)])
                conn.handshake_done(msg.max_frame)
                return conn
        except SilentPeer:  # not logged one by one: the gate counts them (a flood of idle connections)
            await trio.aclose_forcefully(stream)
            raise
        except (TLSFailure, ProtocolError, ConnectionLost) as exc:
            reason = str(exc)
    unlogged = "" if gate is None else gate.refusal_note(stream)  # None: one from there was logged just now
    if unlogged is not None:
        logger.warning("refused connection from %s: %s%s", peer_name, reason, unlogged)
    if conn is None:  # no framed channel to say why on (the TLS handshake failed: its alert said it)
        await trio.aclose_forcefully(stream)
        raise HandshakeError(reason)
    with trio.move_on_after(CLOSE_TIMEOUT):
        with contextlib.suppress(ConnectionLost, ProtocolError):
            await conn.send_now([Error(limits.clip(f"refused: {reason}", limits.MAX_REASON))])
    await conn.aclose()
    raise HandshakeError(reason)


async def _first_byte(stream: trio.abc.Stream, timeout: float) -> None:
    """Return once the peer of `stream` has sent something (or closed); SilentPeer after `timeout`
    seconds of nothing. A stream that is not a socket's returns at once."""
    sock = getattr(stream, "socket", None)
    if sock is None:
        return
    with trio.move_on_after(timeout):
        await trio.lowlevel.wait_readable(sock)
        return
    raise SilentPeer(f"sent nothing within {timeout} s")


def _check_authenticate(
    msg: Message,
    link: LinkConfig,
    nonce: bytes,
    role: str,
    node_id: str,
    allowed_roles: set[str],
    identity: Identity | None,
) -> str | None:
    """None if `msg` is a valid Authenticate for this server of `link` (from the holder of `identity`,
    under TLS) telling a max_frame this side accepts, else the reason to refuse."""
    if isinstance(msg, Error):
        return f"the peer refused the connection: {clip(msg.reason)}"
    if not isinstance(msg, Authenticate):
        return f"expected Authenticate, got {type(msg).__name__}"
    if msg.version != PROTOCOL_VERSION:
        return f"protocol version mismatch: peer speaks {msg.version}, this {role} speaks {PROTOCOL_VERSION}"
    if msg.role not in allowed_roles:
        return f"a {clip(msg.role)!r} may not connect to a {role} (allowed: {', '.join(sorted(allowed_roles))})"
    if identity is not None:
        if not identity.may_claim(msg.role):
            return f"the {identity.role} certificate {clip(identity.name)!r} may not connect as a {clip(msg.role)}"
    else:
        assert link.secret is not None  # no TLS identity: the cluster secret authenticates (accept's rule)
        expected = auth.proof(link.secret, "client", nonce, PROTOCOL_VERSION, msg.role, msg.peer_id, role, node_id)
        if not auth.verify(expected, msg.mac):
            return f"authentication failed for {msg.role} {clip(msg.peer_id)!r}: it does not know the cluster secret"
        if len(msg.nonce) != auth.NONCE_SIZE:
            return f"client nonce must be {auth.NONCE_SIZE} bytes, got {len(msg.nonce)}"
    frame_problem = limits.peer_frame_problem(msg.max_frame, link.max_frame)
    if frame_problem is not None:
        return f"{msg.role} {clip(msg.peer_id)!r}: {frame_problem}"
    return None


async def connect(address: Address, *, link: LinkConfig, role: str, peer_id: str) -> Connection:
    """Open a TCP connection (a Unix socket's, for "unix:PATH") to `address` and run the client side of
    the handshake under `link` (over TLS with `link.tls`).

    Error handling: OSError if nothing listens there; HandshakeError if the server refuses us (its
    reason is in the message), speaks another version, cannot prove it knows the secret (or has no
    certificate of the cluster CA for the role it claims), or the whole exchange takes longer than
    `link.handshake_timeout` seconds.
    """
    name = format_address(address)
    with trio.move_on_after(link.handshake_timeout) as scope:
        path = unix_path(address)
        stream = await trio.open_tcp_stream(*address) if path is None else await trio.open_unix_socket(path)
    if scope.cancelled_caught:
        raise HandshakeError(f"could not connect to {name} within {link.handshake_timeout} s")
    return await connect_stream(stream, link=link, role=role, peer_id=peer_id, peer_name=name)


async def connect_stream(
    stream: trio.abc.Stream, *, link: LinkConfig, role: str, peer_id: str, peer_name: str = "peer"
) -> Connection:
    """The client side of the handshake over an open `stream` (see `connect`); closes it on failure."""
    secret, tls = link.secret, link.tls
    with trio.move_on_after(link.handshake_timeout):
        identity = channel = None
        if tls is not None:
            try:
                channel = await start_tls(stream, tls, server_side=False)
                identity = peer_identity(channel)
            except TLSFailure as exc:
                await trio.aclose_forcefully(stream)
                raise HandshakeError(f"{peer_name}: {exc}") from None
            if identity is None:
                await trio.aclose_forcefully(stream)
                raise HandshakeError(f"{peer_name}: TLS: the server's certificate names no sparrow role")
        conn = Connection(stream, max_frame=link.max_frame, peer_name=peer_name, tls=channel)
        try:
            await _client_handshake(conn, secret, role, peer_id, peer_name, identity)
        except BaseException:
            await conn.aclose()
            raise
        return conn
    await trio.aclose_forcefully(stream)
    hint = "" if tls is not None else TLS_SERVICE_HINT
    raise HandshakeError(f"handshake with {peer_name} not completed within {link.handshake_timeout} s{hint}")


async def _client_handshake(
    conn: Connection, secret: bytes | None, role: str, peer_id: str, name: str, identity: Identity | None
) -> None:
    try:
        challenge = await conn.receive_one()
    except ConnectionLost:
        # A TLS server waits for a ClientHello and closes a silent peer: a plaintext client sees only the close.
        hint = "" if identity is not None else TLS_SERVICE_HINT
        raise HandshakeError(f"{name} closed the connection before sending its Challenge{hint}") from None
    try:
        if isinstance(challenge, Error):
            raise HandshakeError(f"{name} refused the connection: {clip(challenge.reason, limits.MAX_REASON)}")
        if not isinstance(challenge, Challenge):
            raise HandshakeError(f"{name} sent {type(challenge).__name__} instead of a Challenge")
        if challenge.version != PROTOCOL_VERSION:
            raise HandshakeError(
                f"{name} speaks protocol version {challenge.version}, this {role} speaks {PROTOCOL_VERSION}"
            )
        server_role, server_id = challenge.role, challenge.peer_id
        frame_problem = limits.peer_frame_problem(challenge.max_frame, conn.max_frame)
        if frame_problem is not None:
            with contextlib.suppress(ConnectionLost, ProtocolError):
                await conn.send_now([Error(clip(f"refused: {frame_problem}", limits.MAX_REASON))])
            raise HandshakeError(f"refused {name}: {frame_problem}")
        if identity is not None and not identity.may_claim(server_role):
            raise HandshakeError(
                f"{name} claims to be a {clip(server_role)} but holds the {identity.role} certificate "
                f"{clip(identity.name)!r}"
            )
        nonce = auth.new_nonce()
        mac = b""
        if identity is None:
            assert secret is not None  # the insecure mode: its caller loaded the secret
            mac = auth.proof(secret, "client", challenge.nonce, PROTOCOL_VERSION, role, peer_id, server_role, server_id)
        await conn.send_now([Authenticate(PROTOCOL_VERSION, role, peer_id, mac, nonce, conn.max_frame)])
        reply = await conn.receive_one()
    except ConnectionLost as exc:
        raise HandshakeError(f"{name} closed the connection during the handshake ({exc})") from None
    if isinstance(reply, Error):
        raise HandshakeError(f"{name} refused the connection: {clip(reply.reason, limits.MAX_REASON)}")
    if not isinstance(reply, Welcome):
        raise HandshakeError(f"{name} sent {type(reply).__name__} instead of Welcome")
    if identity is None:
        assert secret is not None
        expected = auth.proof(secret, "server", nonce, PROTOCOL_VERSION, server_role, server_id, role, peer_id)
        if not auth.verify(expected, reply.mac):
            raise HandshakeError(f"{name} did not prove it knows the cluster secret")
    conn.peer_role, conn.peer_id, conn.identity = server_role, server_id, identity
    conn.handshake_done(challenge.max_frame)


async def keep_connected(
    address: Address,
    serve: Callable[[Connection], Awaitable[None]],
    *,
    link: LinkConfig,
    role: str,
    peer_id: str,
    redial_delay: float = 0.5,
) -> None:
    """Connect to `address` under `link` and `await serve(conn)`; whenever the connection fails or ends,
    wait `redial_delay` seconds and do it again, until cancelled. Failures to connect are logged."""
    while True:
        try:
            conn = await connect(address, link=link, role=role, peer_id=peer_id)
        except (OSError, HandshakeError) as exc:
            logger.warning("cannot reach %s: %s", format_address(address), exc)
        else:
            with contained(logger, f"the link to {format_address(address)}"):
                await serve(conn)
        await trio.sleep(redial_delay)


def peer_name(stream: trio.abc.Stream) -> str:
    """ "host:port" of the peer of a socket stream ("unix peer" on a Unix socket), for log lines;
    "unknown peer" otherwise."""
    sock = getattr(stream, "socket", None)  # a SocketStream's; other streams have none
    try:
        if sock is None:
            return "unknown peer"
        if sock.family == socket.AF_UNIX:
            return "unix peer"
        return format_address(sock.getpeername()[:2])
    except (OSError, TypeError, ValueError):
        return "unknown peer"
