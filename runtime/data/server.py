"""A node monitor's data listener (trio): it serves the values its store holds to clients and node monitors.

Every connection opens with the handshake of every other link (wire/handshake.py: the cluster secret,
or TLS with the cluster CA), as a node monitor accepting the roles `client` and `node-monitor`. On it
a peer sends FetchValue (answered by the value in chunks, transfer.py, or ValueMissing; the link
stays), on a plain Unix socket FetchFile (a value in a memory file is answered by ValueFile and the
file's descriptor itself, SCM_RIGHTS: sealed, so its receiver can only read it; another as FetchValue)
and, a client only, ReleaseValues and PutValue (an upload, upload.py). Under TLS a client is served
and may release only the values of its certificate's user (an admin: any), and its uploads are that
user's; a node monitor fetches a value for a task it runs, and gets it only if the task's user, which it
names (FetchValue.user), is the value's. In the insecure mode the key, random and unguessable, is the
capability.

Error handling: a message not allowed here gets Error and the link is closed; a peer that takes no
chunk for `stall_timeout` seconds is dropped, and so is a client that sends none for as long halfway
through an upload (its reservation given back); a link idle for `idle_timeout` is closed (its peer
opens another when it needs one). Whatever happens on one link ends only that link.
"""

from __future__ import annotations

import array
import contextlib
import logging
import socket
from collections import Counter
from typing import Any

import msgspec
import trio

from ..errors import ConnectionLost, ProtocolError
from ..wire.connection import Connection
from ..wire.framing import HEADER_SIZE
from ..wire.gate import HandshakeGate
from ..wire.handshake import accept_and_serve
from ..wire.limits import DEFAULT_MAX_VALUE, MAX_REASON, STALL_TIMEOUT, clip
from ..wire.link_config import LinkConfig
from ..wire.messages import Error, FetchFile, FetchValue, PutValue, ReleaseValues, ValueFile, ValueKept, ValueMissing
from .links import raw_stream, unix_socket
from .shared import SharedValue
from .store import Value, ValueStore
from .transfer import chunk_prefix, chunks, header
from .upload import Refused, Upload

logger = logging.getLogger(__name__)

DATA_IDLE_TIMEOUT = 60.0  # seconds a data link may stay idle before the node monitor closes it
ROLES = ("client", "node-monitor")
_encoder = msgspec.msgpack.Encoder()


class DataServer:
    """Serves `store` on the data links of the node monitor `node_id`, accepted under `link` (`stats`
    counts what it did)."""

    def __init__(
        self,
        store: ValueStore,
        *,
        node_id: str,
        link: LinkConfig,
        max_value: int = DEFAULT_MAX_VALUE,
        stall_timeout: float = STALL_TIMEOUT,
        idle_timeout: float = DATA_IDLE_TIMEOUT,
        shared_over: int = 0,
    ) -> None:
        self.store = store
        self.shared_over = shared_over  # an upload over this many bytes is kept in a memory file (0: none is)
        self.node_id = node_id
        self.max_value = max_value  # the largest upload it takes
        self.stall_timeout = stall_timeout
        self.idle_timeout = idle_timeout
        self.stats: Counter[str] = Counter()
        self._accept = {
            "link": link,
            "role": "node-monitor",
            "node_id": node_id,
            "allowed_roles": ROLES,
        }
        self._gate = HandshakeGate()

    async def handle_stream(self, stream: trio.abc.Stream) -> None:
        await accept_and_serve(stream, self.serve, log=logger, gate=self._gate, **self._accept)

    async def serve(self, conn: Connection) -> None:
        """Answer `conn`'s requests, one after another, until it closes, breaks the protocol or idles."""
        identity = conn.identity
        client = conn.peer_role == "client"
        user = identity.user if client and identity is not None and not identity.admin else None
        upload: Upload | None = None
        try:
            while True:
                with trio.move_on_after(self.idle_timeout if upload is None else self.stall_timeout):
                    batch = await conn.receive_batch()
                    for msg in batch:
                        if upload is not None:
                            if upload.feed(msg):
                                await self._kept(conn, upload)
                                upload = None
                        elif type(msg) is PutValue and client:
                            upload = self._upload(conn, msg, user)  # its reservation is given back if the link ends
                            with trio.fail_after(self.stall_timeout):
                                await conn.send_now([upload.header])
                            if upload.key is not None:  # 0 bytes: kept already
                                await self._kept(conn, upload)
                                upload = None
                        else:
                            await self._answer(conn, msg, client, user)
                    continue
                if upload is not None:
                    self.stats["uploads_stalled"] += 1
                    logger.warning(
                        "dropped data link %s: its upload sent no chunk for %g s (%s of %s bytes came)",
                        conn,
                        self.stall_timeout,
                        f"{upload.got:,}",
                        f"{upload.size:,}",
                    )
                return  # idle: its peer opens another link when it needs one
        except Refused as exc:
            self.stats["uploads_refused"] += 1
            with trio.move_on_after(1.0), contextlib.suppress(ConnectionLost):
                await conn.send_now([Error(clip(str(exc), MAX_REASON))])
        except ProtocolError as exc:
            self.stats["protocol_errors"] += 1
            reason = clip(str(exc), MAX_REASON)
            logger.warning("closing data link %s: %s", conn, reason)
            with trio.move_on_after(1.0), contextlib.suppress(ConnectionLost):
                await conn.send_now([Error(reason)])
        except trio.TooSlowError:
            self.stats["stalled"] += 1
            logger.warning("dropped data link %s: it took no chunk for %g s", conn, self.stall_timeout)
        except ConnectionLost:
            pass
        finally:
            if upload is not None:
                upload.abandon()
            await conn.aclose()

    def _upload(self, conn: Connection, msg: PutValue, user: str | None) -> Upload:
        """A client's PutValue: the upload, its size reserved. Raises Refused."""
        return Upload(
            self.store,
            msg,
            user=user or "",
            session=conn.peer_id,
            max_value=self.max_value,
            frame_limit=conn.max_frame,
            send_limit=conn.send_limit,
            name=self.node_id,
            shared=0 < self.shared_over < msg.size,
        )

    async def _kept(self, conn: Connection, upload: Upload) -> None:
        assert upload.key is not None
        self.stats["uploads"] += 1
        self.stats["bytes_uploaded"] += upload.size
        with trio.fail_after(self.stall_timeout):
            await conn.send_now([ValueKept(upload.key)])

    async def _answer(self, conn: Connection, msg: Any, client: bool, user: str | None) -> None:
        kind = type(msg)
        if kind is FetchValue or kind is FetchFile:
            if not client and conn.identity is not None:  # a node monitor, for a task of `msg.user` (TLS)
                user = msg.user
            kept = self.store.get(msg.key, user)
            if kept is None:
                self.stats["missing"] += 1
                with trio.fail_after(self.stall_timeout):
                    await conn.send_now(
                        [
                            ValueMissing(
                                f"node monitor {self.node_id} holds no such value (released, "
                                "never made here, or another user's)"
                            )
                        ]
                    )
                return
            value = kept.value
            if kind is FetchFile and type(value) is SharedValue:
                sock = unix_socket(conn)
                if sock is not None:
                    await self._send_file(conn, sock, value)
                    return
            first = header(value, conn.send_limit)
            with trio.fail_after(self.stall_timeout):
                await conn.send_now([first])
            if raw_stream(conn) is None:
                for chunk in chunks(value, first.chunk):
                    with trio.fail_after(self.stall_timeout):
                        await conn.send_now([chunk])
            else:
                await self._send_raw(conn, value, first.chunk)
            self.stats["served"] += 1
            self.stats["bytes_served"] += len(value)
        elif kind is ReleaseValues and client:
            self.stats["released"] += self.store.release(msg.keys, user)
        else:
            raise ProtocolError(f"{kind.__name__} is not allowed on a data link from a {conn.peer_role}")

    async def _send_file(self, conn: Connection, sock: trio.socket.SocketType, value: SharedValue) -> None:
        """Answer ValueFile, its frame sent in one message with the value's descriptor (SCM_RIGHTS)."""
        body = _encoder.encode(ValueFile(len(value)))
        frame = len(body).to_bytes(HEADER_SIZE, "big") + body
        fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [value.fd]))]
        try:
            with trio.fail_after(self.stall_timeout):
                sent = await sock.sendmsg([frame], fds)
                if sent < len(frame):  # the descriptor went with the first bytes
                    await conn.stream.send_all(frame[sent:])
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise ConnectionLost(f"connection to {conn.peer_name} lost: {exc}") from None
        self.stats["served_files"] += 1
        self.stats["bytes_served_files"] += len(value)

    async def _send_raw(self, conn: Connection, value: Value, chunk: int) -> None:
        """Send `value`'s chunks as their frames' prefixes and slices of the value itself (the same bytes as
        send_now's frames, without encoding a copy of each chunk)."""
        stream = raw_stream(conn)
        assert stream is not None
        view = memoryview(value).cast("B")
        try:
            for index, start in enumerate(range(0, len(view), chunk)):
                part = view[start : start + chunk]
                with trio.fail_after(self.stall_timeout):
                    await stream.send_all(chunk_prefix(index, len(part)))
                with trio.fail_after(self.stall_timeout):
                    await stream.send_all(part)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionLost(f"connection to {conn.peer_name} lost: {exc}") from None
