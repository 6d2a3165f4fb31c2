"""A big value's bytes with its buffers out of band (pickle protocol 5), sans-I/O: what a process worker
writes into the memory file of a result it keeps (shared.py), and what `loads` reads back without
copying the buffers (executor workers import this: no trio).

Layout: MAGIC, the number of buffers n (4 bytes), the pickle's length (8 bytes) and each buffer's
length (8 bytes each), all big-endian; then the pickle; then each buffer, each starting at a multiple
of ALIGN bytes from the start. An array's data is then read in place: `loads` hands the pickle views
of the buffers (numpy makes arrays over them), where an in-band pickle makes a copy of each. A pickle
starts with its PROTO opcode (0x80), never with MAGIC, so `loads` takes both.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, Any

import cloudpickle

if TYPE_CHECKING:
    from typing_extensions import Buffer  # bytes, bytearray, memoryview, mmap: what memoryview() takes

MAGIC = b"SPk5"
ALIGN = 64
_HEAD = len(MAGIC) + 4 + 8


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def dump(value: object) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """`value` pickled with its buffers out of band: (the pickle, the buffers). Raises what pickling raises."""
    buffers: list[pickle.PickleBuffer] = []
    data = cloudpickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    return data, buffers


def packed_size(data: bytes, buffers: list[pickle.PickleBuffer]) -> int:
    """The bytes `write` takes for this pickle and these buffers."""
    size = _aligned(_HEAD + 8 * len(buffers) + len(data))
    for buffer in buffers:
        size = _aligned(size + buffer.raw().nbytes)
    return size


def _parts(data: bytes, buffers: list[pickle.PickleBuffer]) -> list[memoryview]:
    """The packed value's parts in order (the head with the pickle, then each buffer), each to start aligned."""
    raws = [buffer.raw() for buffer in buffers]
    head = MAGIC + len(raws).to_bytes(4, "big") + len(data).to_bytes(8, "big")
    head += b"".join(raw.nbytes.to_bytes(8, "big") for raw in raws)
    return [memoryview(head + data), *(raw.cast("B") for raw in raws)]


def write(fd: int, data: bytes, buffers: list[pickle.PickleBuffer]) -> None:
    """Write the packed value at the start of the file `fd` (of at least packed_size bytes)."""
    offset = 0
    for part in _parts(data, buffers):
        view = part.cast("B")
        while view:
            done = os.pwrite(fd, view, offset)
            view, offset = view[done:], offset + done
        offset = _aligned(offset)


def pack(data: bytes, buffers: list[pickle.PickleBuffer]) -> bytes:
    """The packed value in memory (what `write` puts in a file), for a value sent as bytes (an upload)."""
    pieces: list = []
    offset = 0
    for part in _parts(data, buffers):
        pieces += [bytes(_aligned(offset) - offset), part]
        offset = _aligned(offset) + part.nbytes
    pieces.append(bytes(_aligned(offset) - offset))
    return b"".join(pieces)


def loads(buf: Buffer) -> Any:
    """The value in `buf`: a packed one (its buffers as views of `buf`: an array over one is writable
    where `buf` is), or a plain pickle. Raises ValueError for a packed value whose lengths overrun it."""
    view = memoryview(buf).cast("B")
    if view[: len(MAGIC)] != MAGIC:
        return cloudpickle.loads(buf)
    count = int.from_bytes(view[4:8], "big")
    length = int.from_bytes(view[8:_HEAD], "big")
    start = _HEAD + 8 * count
    if start > len(view):
        raise ValueError(f"a packed value of {len(view):,} bytes with {count:,} buffers")
    sizes = [int.from_bytes(view[_HEAD + 8 * i : _HEAD + 8 * i + 8], "big") for i in range(count)]
    data = view[start : start + length]
    offset = _aligned(start + length)
    parts = []
    for size in sizes:
        if offset + size > len(view):
            raise ValueError(f"a packed value of {len(view):,} bytes whose buffers overrun it")
        parts.append(view[offset : offset + size])
        offset = _aligned(offset + size)
    if len(data) != length:
        raise ValueError(f"a packed value of {len(view):,} bytes whose pickle overruns it")
    return pickle.loads(data, buffers=parts)
