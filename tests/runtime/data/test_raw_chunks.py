"""Chunks read in place from a data link's socket (links.py `_receive_raw`) against holders that break the
protocol there: a big chunk with the wrong index or length, a frame too big where no chunk is due, a stall
in the middle of a chunk. Each is refused naming the value, and the same DataLinks goes on."""

from __future__ import annotations

from functools import partial

import trio

from sparrow_runtime.data.transfer import chunk_prefix
from sparrow_runtime.wire.messages import ValueChunk, ValueHeader

from ...hostile.test_data_plane import _fetch_refused

BIG = 200_000  # over links.SMALL_FRAME: read in place


def test_a_big_chunk_with_another_index_is_refused():
    async def answer(conn, msg):
        await conn.send_now([ValueHeader(BIG, BIG), ValueChunk(1, b"x" * BIG)])

    trio.run(_fetch_refused, answer, BIG, "broke the protocol: .*not chunk 0 of 200,000 bytes")


def test_a_big_chunk_of_another_length_is_refused():
    async def answer(conn, msg):
        await conn.send_now([ValueHeader(2 * BIG, BIG), ValueChunk(0, b"x" * (BIG + 1))])

    trio.run(
        _fetch_refused, answer, 2 * BIG, "broke the protocol: .*a frame of 200,0.. bytes, expected chunk 0 of 200,000"
    )


def test_a_big_frame_before_the_header_is_refused():
    async def answer(conn, msg):
        await conn.send_now([ValueChunk(0, b"x" * BIG)])

    trio.run(_fetch_refused, answer, BIG, "broke the protocol: .*where no chunk was due")


def test_a_holder_that_stalls_inside_a_big_chunk_loses_the_value():
    async def answer(conn, msg):
        await conn.send_now([ValueHeader(BIG, BIG)])
        await conn.stream.send_all(chunk_prefix(0, BIG) + b"h" * (BIG // 2))  # half a chunk, then nothing
        await trio.sleep_forever()

    trio.run(partial(_fetch_refused, answer, BIG, r"stalled \(0 of 200,000 bytes came, then nothing for 0.3 s\)", 0.3))
