"""The authenticated handshake that opens every connection (auth.py's proofs over a framed stream).

`accept` (server side) and `connect` / `connect_stream` (client side) exchange Challenge,
Authenticate and Welcome and return a `Connection` (connection.py) whose `peer_role` and `peer_id`
are proven; `keep_connected` dials an address again whenever its link ends.

Error handling: a peer that sends garbage, speaks another version, claims a role that may not
connect, does not know the cluster secret, or is too slow gets Error(reason) and is closed, and
HandshakeError(reason) is raised; the secret and the MACs are never logged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

import trio

from . import auth
from .address import Address, format_address
from .connection import CLOSE_TIMEOUT, Connection
from .errors import ConnectionLost, HandshakeError, ProtocolError
from .framing import DEFAULT_MAX_FRAME
from .messages import PROTOCOL_VERSION, Authenticate, Challenge, Error, Welcome

logger = logging.getLogger("sparrow_runtime.handshake")

DEFAULT_HANDSHAKE_TIMEOUT = 5.0


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
