"""Chunking a value and putting it back together, with every check the receiver makes."""

from __future__ import annotations

import pytest

from sparrow_runtime.data.transfer import Assembler, TransferError, chunk_prefix, chunk_size, chunks, header
from sparrow_runtime.wire.framing import encode_frames
from sparrow_runtime.wire.limits import CHUNK_SIZE, MESSAGE_OVERHEAD
from sparrow_runtime.wire.messages import Heartbeat, ValueChunk, ValueHeader, ValueMissing

FRAME = 1 << 20


def _receive(value: bytes, send_limit: int = FRAME, **options) -> bytes:
    assembler = Assembler(len(value), frame_limit=FRAME, max_value=options.get("max_value", 1 << 30))
    first = header(value, send_limit)
    done = assembler.feed(first)
    for chunk in chunks(value, first.chunk):
        assert not done
        done = assembler.feed(ValueChunk(chunk.index, bytes(chunk.data)))
    assert done
    return bytes(assembler.value())


@pytest.mark.parametrize("size", [0, 1, 1000, FRAME - MESSAGE_OVERHEAD, 3 * FRAME + 7])
def test_a_value_of_any_size_comes_back_whole_in_chunks_that_fit_the_link(size):
    """Values from empty to several frames come back byte for byte; each chunk fits the link's frame."""
    value = bytes(range(256)) * (size // 256) + b"\x07" * (size % 256)
    assert _receive(value) == value
    assert all(len(c.data) + MESSAGE_OVERHEAD <= FRAME for c in chunks(value, chunk_size(FRAME)))


def test_the_chunk_size_is_at_most_chunk_size_and_under_the_frame_limit():
    """A big frame limit still gives CHUNK_SIZE chunks; a small one, chunks that fit it."""
    assert chunk_size(1 << 30) == CHUNK_SIZE
    assert chunk_size(64 * 1024) == 64 * 1024 - MESSAGE_OVERHEAD


def _started(size: int = 10, chunk: int = 4) -> Assembler:
    assembler = Assembler(size, frame_limit=FRAME, max_value=1000, name="v")
    assembler.feed(ValueHeader(size, chunk))
    return assembler


@pytest.mark.parametrize(
    ("feed", "match"),
    [
        (lambda a: a.feed(ValueHeader(11, 4)), "announced 11 bytes, its reference says 10"),
        (lambda a: a.feed(ValueHeader(10, FRAME)), "over this link's frame limit"),
        (lambda a: _started().feed(ValueChunk(1, b"abcd")), "chunk 1 of 4 bytes, expected chunk 0 of 4"),
        (lambda a: _started().feed(ValueChunk(0, b"abc")), "chunk 0 of 3 bytes, expected chunk 0 of 4"),
        (lambda a: _started().feed(ValueChunk(0, b"a" * 5000)), "expected chunk 0 of 4 bytes"),
        (lambda a: a.feed(ValueChunk(0, b"abcd")), "ValueChunk is not allowed here"),
        (lambda a: _started().feed(ValueHeader(10, 4)), "ValueHeader is not allowed here"),
        (lambda a: a.feed(Heartbeat()), "Heartbeat is not allowed here"),
    ],
)
def test_a_transfer_that_breaks_the_protocol_is_refused_naming_what_was_wrong(feed, match):
    """A header that lies about the size or the chunk size, a chunk out of order, of the wrong length, before
    the header, or any other message: TransferError naming it."""
    with pytest.raises(TransferError, match=match):
        feed(Assembler(10, frame_limit=FRAME, max_value=1000, name="v"))


def test_a_header_that_would_make_a_huge_number_of_chunks_is_refused():
    """1 MB in chunks of 1 byte would be a million messages: refused at the header, naming the count."""
    assembler = Assembler(1_000_000, frame_limit=FRAME, max_value=1 << 30, name="v")
    with pytest.raises(TransferError, match="chunks of 1 bytes make 1,000,000 chunks, over the limit of 100,000"):
        assembler.feed(ValueHeader(1_000_000, 1))


def test_a_chunk_after_the_last_is_refused():
    """Once the value is complete nothing more belongs to the transfer."""
    assembler = _started(4, 4)
    assert assembler.feed(ValueChunk(0, b"abcd"))
    with pytest.raises(TransferError, match="not allowed"):
        assembler.feed(ValueChunk(1, b"e"))


def test_a_value_over_max_value_is_refused_before_anything_is_asked():
    """A reference over the receiver's max_value is refused at once (no buffer of that size is made)."""
    with pytest.raises(TransferError, match="is 2,000 bytes, over the max_value of 1,000 bytes"):
        Assembler(2000, frame_limit=FRAME, max_value=1000)


def test_a_missing_value_ends_the_transfer_with_the_holders_reason():
    """ValueMissing instead of a header: done, with the reason kept."""
    assembler = Assembler(10, frame_limit=FRAME, max_value=1000)
    assert assembler.feed(ValueMissing("released")) and assembler.missing == "released"


@pytest.mark.parametrize("index", [0, 127, 128, 65_536, 2**31])
@pytest.mark.parametrize("size", [1, 255, 256, 65_535, 65_536, CHUNK_SIZE])
def test_a_chunk_sent_as_its_prefix_and_its_data_is_the_frame_msgspec_makes(index, size):
    """chunk_prefix + data is byte for byte the frame of ValueChunk(index, data): a receiver that decodes
    frames and one that reads chunks in place understand the same bytes."""
    data = b"d" * size
    assert chunk_prefix(index, size) + data == bytes(encode_frames([ValueChunk(index, data)]))


@pytest.mark.parametrize("shared", [False, True])
def test_chunks_put_in_place_or_into_a_memory_file_make_the_value(shared):
    """The in-place path (target/put) gives the value the message path gives, in a bytearray or a memory file."""
    value = bytes(range(256)) * 1000
    assembler = Assembler(len(value), frame_limit=FRAME, max_value=1 << 30, shared=shared)
    first = header(value, 100_000)
    assembler.feed(first)
    for chunk in chunks(value, first.chunk):
        target = assembler.target()
        assert (target is None) == shared and len(chunk.data) == assembler.due
        if target is None:
            done = assembler.put(chunk.data)
        else:
            target[:] = chunk.data
            done = assembler.put(target)
    assert done and bytes(assembler.value()) == value
