"""How one value travels, sans-I/O: cut into chunks by its sender, put together and checked by its receiver.

A FetchValue is answered by a ValueHeader (the value's size and the chunk size) and then its ValueChunks
in order, each `chunk` bytes but the last; a value of 0 bytes has no chunk. The chunk size is at most
CHUNK_SIZE and fits the link's frame limit (the smaller max_frame of its two sides), so a value may be
far larger than a frame: its limit is the receiver's `max_value` (a setting, DEFAULT_MAX_VALUE).

Error handling: the receiver raises TransferError, naming what was wrong, for a header whose size is
not the reference's or is over `max_value`, a chunk size over what the link takes or so small that
the value would take more than MAX_CHUNKS chunks, a chunk out of order or of the wrong length, or
any other message; the caller closes that link (and only it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from ..errors import ProtocolError
from ..wire.framing import HEADER_SIZE
from ..wire.limits import CHUNK_SIZE, MAX_CHUNKS, MESSAGE_OVERHEAD
from ..wire.messages import ValueChunk, ValueHeader, ValueMissing
from .shared import SharedValue, Writable
from .store import Value

_encoder = msgspec.msgpack.Encoder()


class TransferError(ProtocolError):
    """A peer sent a transfer that breaks the protocol (the link is closed)."""


def chunk_size(send_limit: int) -> int:
    """The chunk size for a link whose frames are at most `send_limit` bytes."""
    return max(1, min(CHUNK_SIZE, send_limit - MESSAGE_OVERHEAD))


def chunk_prefix(index: int, size: int) -> bytes:
    """The bytes of the frame of ValueChunk(index, `size` bytes of data) before its data: the frame's length
    and the message's msgpack up to the data (msgspec's encoding, which the tests check), so that a chunk is
    sent from its value and received into its place, never encoded or decoded as a whole."""
    body = _encoder.encode(ValueChunk(index, b""))
    assert body[-2:] == b"\xc4\x00"  # an empty bin8 ends it
    if size < 1 << 8:
        body = body[:-2] + b"\xc4" + size.to_bytes(1, "big")
    elif size < 1 << 16:
        body = body[:-2] + b"\xc5" + size.to_bytes(2, "big")
    else:
        body = body[:-2] + b"\xc6" + size.to_bytes(4, "big")
    return (len(body) + size).to_bytes(HEADER_SIZE, "big") + body


def header(value: Value, send_limit: int) -> ValueHeader:
    return ValueHeader(len(value), chunk_size(send_limit))


def chunks(value: Value, chunk: int) -> Iterator[ValueChunk]:
    """The ValueChunks of `value` (views of it, not copies), `chunk` bytes each but the last."""
    view = memoryview(value)
    for index, start in enumerate(range(0, len(value), chunk)):
        yield ValueChunk(index, view[start : start + chunk])  # type: ignore[arg-type]  # msgspec encodes a view as bytes


class Assembler:
    """Puts a value of `size` bytes (its reference's) back together from what its holder sends; `frame_limit`
    is the largest frame this side accepts on the link, `max_value` the largest value it takes; `shared`: put
    it together in a memory file (shared.py: a node monitor hands it to a worker process without a copy)."""

    def __init__(
        self, size: int, *, frame_limit: int, max_value: int, name: str = "the value", shared: bool = False
    ) -> None:
        if size > max_value:
            raise TransferError(f"{name} is {size:,} bytes, over the max_value of {max_value:,} bytes")
        self.size = size
        self.frame_limit = frame_limit
        self.name = name
        self.chunk = 0  # unknown until the header
        self.next = 0  # the index of the next chunk
        self.got = 0
        self.missing: str | None = None  # the holder's reason, if it answered ValueMissing
        self.shared = shared and size > 0
        self._file: Writable | None = None
        self._buf = bytearray()

    @property
    def done(self) -> bool:
        return self.missing is not None or (self.chunk > 0 and self.got == self.size)

    def feed(self, msg: Any) -> bool:  # any message of the link (a hot path: dispatched on type(msg))
        """Take one message of the answer; True once the value is complete (or the holder has none)."""
        kind = type(msg)
        if kind is ValueMissing and not self.chunk:
            self.missing = msg.reason
            return True
        if kind is ValueHeader and not self.chunk:
            if msg.size != self.size:
                raise TransferError(
                    f"{self.name}: the holder announced {msg.size:,} bytes, its reference says {self.size:,}"
                )
            if msg.chunk + MESSAGE_OVERHEAD > self.frame_limit:
                raise TransferError(
                    f"{self.name}: chunks of {msg.chunk:,} bytes would be over this link's frame limit of "
                    f"{self.frame_limit:,} bytes"
                )
            count = -(-self.size // msg.chunk)
            if count > MAX_CHUNKS:
                over = f"over the limit of {MAX_CHUNKS:,}"
                raise TransferError(f"{self.name}: chunks of {msg.chunk:,} bytes make {count:,} chunks, {over}")
            self.chunk = msg.chunk
            if self.shared:
                self._file = Writable(self.size)
            else:
                self._buf = bytearray(self.size)
            return self.size == 0
        if kind is ValueChunk and self.due:
            expected = self.due
            if msg.index != self.next or len(msg.data) != expected:
                raise TransferError(
                    f"{self.name}: chunk {msg.index} of {len(msg.data):,} bytes, expected chunk {self.next} of "
                    f"{expected:,} bytes"
                )
            return self.put(msg.data)
        raise TransferError(f"{self.name}: {kind.__name__} is not allowed here in a transfer")

    @property
    def due(self) -> int:
        """The length of the chunk that comes next (0: none is due: no header yet, or all came)."""
        return min(self.chunk, self.size - self.got) if self.chunk else 0

    def target(self) -> memoryview | None:
        """Where the chunk due next goes, to receive it in place; None: in a memory file (give it to `put`)."""
        if self._file is not None or not self.due:
            return None
        return memoryview(self._buf)[self.got : self.got + self.due]

    def put(self, data: bytes | bytearray | memoryview) -> bool:
        """The chunk due next is `data` (checked by the caller: `due` bytes; already in place if it came into
        `target()`); True once the value is complete."""
        if self._file is not None:
            self._file.write(data, self.got)
        elif type(data) is not memoryview or data.obj is not self._buf:
            self._buf[self.got : self.got + len(data)] = data
        self.got += len(data)
        self.next += 1
        return self.got == self.size

    def value(self) -> bytearray | SharedValue:
        """The value, once `done` (and not missing)."""
        assert self.done and self.missing is None
        buf, self._buf = self._buf, bytearray()
        if self._file is not None:
            file, self._file = self._file, None
            return file.seal()
        return buf
