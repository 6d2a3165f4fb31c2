"""A client's upload of a value to a node monitor's data listener (Client.scatter): the node monitor's side,
sans-I/O (`Upload`), and the client's, over one data link (`put_value`, trio).

The client sends PutValue(size). The node monitor checks the size against its max_value and reserves it in
its store (the memory limit), then answers ValueHeader(size, chunk): send it in ValueChunks of `chunk`
bytes (it fits the link's frames); or Error with the reason, and closes the link. The chunks are checked
and put together by transfer.py's Assembler, as a fetch's are (order, length, nothing past the last, at
most MAX_CHUNKS). Once the last chunk came the value is kept, tagged with the link's user (under TLS, its
certificate's; another user cannot fetch or release it) and the client's id as its session (released with
the client's other values when it is gone), and the answer is ValueKept(key). A link that sends no chunk
for STALL_TIMEOUT seconds halfway is dropped by its node monitor, and the reservation given back.

Error handling: the node monitor's side raises Refused (answered with Error, the link closed) for a value
over a limit, TransferError for chunks that break the protocol (the same). The client's side raises
UploadFailed naming the node monitor and why (refused, stalled, broke the protocol, link lost).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ..errors import ConnectionLost, HandshakeError, ProtocolError, UploadFailed
from ..wire.connection import Connection
from ..wire.limits import STALL_TIMEOUT, clip
from ..wire.messages import Error, PutValue, ValueHeader, ValueKept
from .links import LINKS_PER_HOLDER
from .store import StoreFull, Value, ValueStore
from .transfer import Assembler, chunk_size, chunks


class Refused(Exception):
    """An upload that this node monitor does not take (over a limit): the reason, for the client."""


class Upload:
    """One upload under way at a node monitor, from its PutValue to its last chunk. `header` is the answer
    to send; feed it the chunks; `key` is set once the value is kept (`shared`: in a memory file, data/shared.py,
    which the node monitor's workers and its peers on this host then take without a copy). Call `abandon()`
    if the link ends before: the reservation goes back. Raises Refused from the constructor."""

    def __init__(
        self,
        store: ValueStore,
        msg: PutValue,
        *,
        user: str,
        session: str,
        max_value: int,
        frame_limit: int,
        send_limit: int,
        name: str,
        shared: bool = False,
    ) -> None:
        size = msg.size
        if size > max_value:
            raise Refused(
                f"node monitor {name} refuses an upload of {size:,} bytes: over its max_value of {max_value:,} bytes"
            )
        try:
            store.reserve(size)
        except StoreFull as exc:
            raise Refused(f"node monitor {name}: {exc}") from None
        self._store = store
        self._open = True  # the reservation is held
        self._user = user
        self._session = session
        self.size = size
        self.key: bytes | None = None
        self.header = ValueHeader(size, chunk_size(send_limit))
        self._assembler = Assembler(
            size, frame_limit=frame_limit, max_value=max_value, name=f"an upload of {size:,} bytes", shared=shared
        )
        if self._assembler.feed(self.header):  # 0 bytes: no chunk comes
            self._keep()

    @property
    def got(self) -> int:
        return self._assembler.got

    def feed(self, msg: Any) -> bool:  # any message of the link: the Assembler checks it
        """Take one message of the upload (TransferError if it breaks the protocol); True once it is kept."""
        if self._assembler.feed(msg):
            self._keep()
            return True
        return False

    def _keep(self) -> None:
        value = self._assembler.value()
        self._open = False
        self.key = self._store.put(value, self._user, self._session, reserved=True)

    def abandon(self) -> None:
        """The link ended before the last chunk: give the reservation back (once)."""
        if self._open:
            self._open = False
            self._store.unreserve(self.size)


async def put_value(conn: Connection, value: Value, *, name: str, stall_timeout: float = STALL_TIMEOUT) -> bytes:
    """Upload `value` (bytes-like, pickled) over `conn`, a data link to the node monitor `name`; its key
    there. Raises UploadFailed (module docstring); the link is then unusable (the caller closes it)."""
    size = len(value)

    async def answer() -> Any:  # the node monitor's answer, not an Error
        with trio.fail_after(stall_timeout):
            msg = await conn.receive_one()
        if type(msg) is Error:
            raise UploadFailed(f"node monitor {name} refused the upload of {size:,} bytes: {clip(msg.reason)}")
        return msg

    try:
        with trio.fail_after(stall_timeout):
            await conn.send_now([PutValue(size)])
        go = await answer()
        if type(go) is not ValueHeader or go.size != size:
            raise ProtocolError(f"{type(go).__name__} in answer to PutValue({size:,})")
        for chunk in chunks(value, go.chunk):
            with trio.fail_after(stall_timeout):
                await conn.send_now([chunk])
        kept = await answer()
        if type(kept) is not ValueKept:
            raise ProtocolError(f"{type(kept).__name__} where ValueKept was due")
    except trio.TooSlowError:
        raise UploadFailed(
            f"the upload of {size:,} bytes to node monitor {name} stalled (nothing for {stall_timeout:g} s)"
        ) from None
    except (ConnectionLost, ProtocolError) as exc:
        raise UploadFailed(f"the upload of {size:,} bytes to node monitor {name} failed: {exc}") from None
    return kept.key


class Uploader:
    """A client's data links for uploads (Client.scatter): at most LINKS_PER_HOLDER at once to one node monitor,
    each reused once its upload is done; `connect` opens a link to an address (the handshake of every link)."""

    def __init__(
        self, connect: Callable[[str], Awaitable[Connection]], *, stall_timeout: float = STALL_TIMEOUT
    ) -> None:
        self._connect = connect
        self.stall_timeout = stall_timeout
        self.uploaded = 0  # values kept
        self.bytes_uploaded = 0
        self._idle: dict[str, list[Connection]] = {}
        self._limits: dict[str, trio.Semaphore] = {}

    async def put(self, address: str, name: str, value: Value) -> bytes:
        """Upload `value` to the node monitor `name` at `address`; its key there. Raises UploadFailed."""
        limit = self._limits.get(address)
        if limit is None:
            limit = self._limits[address] = trio.Semaphore(LINKS_PER_HOLDER)
        async with limit:
            idle = self._idle.setdefault(address, [])
            while True:
                while idle and idle[-1].closed:
                    idle.pop()
                reused = bool(idle)
                conn = idle.pop() if reused else await self._open(address, name)
                try:
                    key = await put_value(conn, value, name=name, stall_timeout=self.stall_timeout)
                except UploadFailed:
                    await conn.aclose()
                    if reused:
                        continue  # closed by its node monitor while idle: again on a fresh link
                    raise
                except BaseException:
                    await conn.aclose()
                    raise
                idle.append(conn)
                self.uploaded += 1
                self.bytes_uploaded += len(value)
                return key

    async def _open(self, address: str, name: str) -> Connection:
        try:
            return await self._connect(address)
        except (OSError, ValueError, HandshakeError) as exc:
            raise UploadFailed(f"cannot reach node monitor {name} ({clip(address)}) to upload: {exc}") from None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                await conn.aclose()
