"""Length-prefixed framing, sans-I/O: a 4-byte big-endian length, then one msgpack-encoded message.

`encode_frames` packs a burst of messages into one buffer (one write per burst); `FrameDecoder.feed`
takes whatever bytes a receive returned and decodes every complete frame in them at once.

Error handling: a declared length over `max_frame` raises FrameTooLarge as soon as the 4-byte header
is seen (the body is never buffered); bytes that are not a valid message, or a message with a field
over its limit (messages.py), raise ProtocolError naming the message and the field. The messages
before the bad frame are returned first, and the error is raised by the next `feed` (or
`raise_error`). Either way the decoder is then unusable: the caller closes the connection.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import FrameTooLarge, ProtocolError
from .limits import clip
from .messages import Message

DEFAULT_MAX_FRAME = 64 * 1024 * 1024
HEADER_SIZE = 4
# Bytes asked of one read. Above 128 KiB (glibc's mmap threshold) every read maps and unmaps its
# buffer: a 256 KiB read cost 15 us more than a 64 KiB one, 65 us per task in a worker (measured).
RECEIVE_SIZE = 64 * 1024

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


def check_max_frame(max_frame: int) -> int:
    if not isinstance(max_frame, int) or max_frame < 16 or max_frame >= 2**32:
        raise ValueError(f"max_frame must be an int in [16, 2**32), got {max_frame!r}")
    return max_frame


def encode_frames(messages: Sequence[Any], max_frame: int = DEFAULT_MAX_FRAME) -> bytearray:
    """Encode `messages` into one buffer of frames. Raises FrameTooLarge if one would exceed `max_frame`."""
    buf = bytearray()
    encode_into = _encoder.encode_into
    for msg in messages:
        start = len(buf)
        buf += b"\0\0\0\0"
        encode_into(msg, buf, start + HEADER_SIZE)
        size = len(buf) - start - HEADER_SIZE
        if size > max_frame:
            raise FrameTooLarge(
                f"{type(msg).__name__} encodes to {size} bytes, over the frame limit of {max_frame} bytes"
            )
        buf[start : start + HEADER_SIZE] = size.to_bytes(HEADER_SIZE, "big")
    return buf


def _message_classes() -> dict[int, type[msgspec.Struct]]:
    return {cls.__struct_config__.tag: cls for cls in typing.get_args(Message)}


_BY_TAG = _message_classes()
_PATH = re.compile(r" - at `\$\[(\d+)\](?:\[(\d+)\])?")  # where msgspec says the bad value is


def describe_invalid(frame: bytes | memoryview, exc: Exception) -> str:
    """Why `frame` is not a valid message, naming the message and the field when they can be told
    (msgspec's own error names array positions: `$[2]` is the second field of a tagged struct, `$[3][0]`
    the first field of the struct that is its third)."""
    text = str(exc)
    try:
        raw = msgspec.msgpack.decode(frame)
        cls = _BY_TAG[raw[0]]
    except Exception:
        return f"undecodable message: {clip(text)}"
    where = _PATH.search(text)
    if where is not None and 0 < int(where[1]) <= len(cls.__struct_fields__):
        field = msgspec.structs.fields(cls)[int(where[1]) - 1]
        name = f"{cls.__name__}.{field.name}"
        nested = field.type if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct) else None
        if nested is not None and where[2] is not None and int(where[2]) < len(nested.__struct_fields__):
            name += f".{nested.__struct_fields__[int(where[2])]}"  # a struct in the message: an Outcome
        return f"invalid {name}: {clip(text[: where.start()])}"
    return f"invalid {cls.__name__}: {clip(text)}"


class FrameDecoder:
    """Accumulates received bytes and returns the complete messages in them. `max_frame` may be
    changed between feeds (a connection raises it once the handshake is done)."""

    __slots__ = ("_buf", "_error", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self.max_frame = check_max_frame(max_frame)
        self._error: ProtocolError | None = None

    def raise_error(self) -> None:
        """Raise the error found after the messages the last `feed` returned, if any."""
        if self._error is not None:
            raise self._error

    def feed(self, data: bytes | bytearray) -> list:
        """Add `data`; return every message now complete, in order (possibly none)."""
        self.raise_error()
        buf = self._buf
        buf += data
        out = []
        pos = 0
        end = len(buf)
        decode = _decoder.decode
        view = memoryview(buf)
        try:
            while end - pos >= HEADER_SIZE:
                size = int.from_bytes(view[pos : pos + HEADER_SIZE], "big")
                if size > self.max_frame:
                    raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {self.max_frame} bytes")
                if end - pos - HEADER_SIZE < size:
                    break
                frame = view[pos + HEADER_SIZE : pos + HEADER_SIZE + size]
                try:
                    out.append(decode(frame))
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise ProtocolError(describe_invalid(frame, exc)) from None
                finally:
                    frame.release()
                pos += HEADER_SIZE + size
        except ProtocolError as exc:
            self._error = exc
            if not out:
                raise
        finally:
            view.release()
        if pos:
            del buf[:pos]
        return out

    @property
    def missing(self) -> int:
        """Bytes still to come of the frame begun in the buffer (0: none begun, or its header is not
        complete): a receiver may read that much at once."""
        buf = self._buf
        if len(buf) < HEADER_SIZE:
            return 0
        return HEADER_SIZE + int.from_bytes(buf[:HEADER_SIZE], "big") - len(buf)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf)
