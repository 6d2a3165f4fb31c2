"""Framing (framing.py) and messages (messages.py): bursts round-trip, limits and garbage are refused."""

import msgspec
import pytest

from sparrow_runtime.errors import FrameTooLarge, ProtocolError
from sparrow_runtime.wire.framing import COPY_FRAME, FrameDecoder, encode_frames
from sparrow_runtime.wire.messages import Constraint, GetTask, Heartbeat, SubmitJob, TaskToNode


def test_burst_round_trips_when_fed_byte_by_byte():
    """A burst of frames decodes to the same messages in order, however the bytes are split."""
    msgs = [
        GetTask(5),
        TaskToNode(1, 2, b"x" * 300),
        Heartbeat(),
        SubmitJob(7, [b"a", b"b"], "alice", 3, 1.5, Constraint(("nm-0",), ("gpu",)), [None, Constraint()]),
    ]
    data = bytes(encode_frames(msgs))
    decoder = FrameDecoder()
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i : i + 1])
    assert got == msgs
    assert decoder.buffered == 0
    assert FrameDecoder().feed(data) == msgs  # all frames of one receive at once


def test_oversized_frame_is_refused_from_its_header():
    """A declared length over the limit raises before the body arrives."""
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(FrameTooLarge, match="exceeds the limit of 1024"):
        decoder.feed((1025).to_bytes(4, "big"))


def test_garbage_is_a_protocol_error():
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match="undecodable"):
        decoder.feed(b"\x00\x00\x00\x04\xff\xfe\xfd\xfc")


def test_encoding_a_message_over_the_limit_raises():
    with pytest.raises(FrameTooLarge, match="TaskToNode"):
        encode_frames([TaskToNode(1, 0, b"x" * 100)], max_frame=64)


def test_max_frame_must_be_sane():
    with pytest.raises(ValueError, match="max_frame"):
        FrameDecoder(max_frame=0)


def test_messages_are_validated_on_decode():
    """A frame whose fields have the wrong types is rejected, not passed on."""
    body = msgspec.msgpack.encode([25, "not-an-int"])  # GetTask's tag with a str job id
    with pytest.raises(ProtocolError, match=r"invalid GetTask\.job_id: Expected `int`, got `str`"):
        FrameDecoder().feed(len(body).to_bytes(4, "big") + body)


def test_messages_before_a_bad_frame_are_kept():
    """Bad input loses nothing: the good frames before it come out, then the error."""
    decoder = FrameDecoder(max_frame=1024)
    data = bytes(encode_frames([GetTask(1), GetTask(2)])) + (4096).to_bytes(4, "big")
    assert decoder.feed(data) == [GetTask(1), GetTask(2)]
    with pytest.raises(FrameTooLarge):
        decoder.raise_error()
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"")


def test_big_frames_round_trip_whole_and_split():
    """Frames over COPY_FRAME (decoded through a view of the bytes read) come out as the small ones do,
    whole in one read or split across reads, with small frames around them."""
    big = TaskToNode(1, 2, bytes(range(256)) * (COPY_FRAME // 128))
    msgs = [GetTask(1), big, GetTask(2), big]
    data = bytes(encode_frames(msgs))
    assert FrameDecoder().feed(data) == msgs
    decoder, got = FrameDecoder(), []
    for i in range(0, len(data), 50_000):
        got += decoder.feed(data[i : i + 50_000])
    assert got == msgs
    assert decoder.buffered == 0


def test_a_big_invalid_frame_is_a_protocol_error_after_the_good_ones():
    body = msgspec.msgpack.encode([25, "x" * (2 * COPY_FRAME)])  # GetTask's tag with a str job id
    decoder = FrameDecoder()
    assert decoder.feed(bytes(encode_frames([GetTask(1)])) + len(body).to_bytes(4, "big") + body) == [GetTask(1)]
    with pytest.raises(ProtocolError, match=r"invalid GetTask\.job_id"):
        decoder.feed(b"")
