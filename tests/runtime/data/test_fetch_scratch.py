"""A node monitor's fetches into memory files reuse their scratch buffers (data/links.py, SPARE_SCRATCH): values
fetched one after the other and at once each arrive whole and unmixed, and the spares stay bounded."""

from __future__ import annotations

import os
from functools import partial

import pytest
import trio

from sparrow_runtime.data import shared
from sparrow_runtime.data.links import SPARE_SCRATCH, DataLinks
from sparrow_runtime.data.server import DataServer
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.wire.limits import CHUNK_SIZE
from sparrow_runtime.wire.messages import ValueRef

SECRET = b"f" * 32
pytestmark = pytest.mark.skipif(not shared.AVAILABLE, reason="memory files are Linux only")


async def _serving(test) -> None:
    store = ValueStore(1 << 31)
    server = DataServer(store, node_id="nm", secret=SECRET)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle_stream, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(60):
            await test(store, f"127.0.0.1:{port}")
        nursery.cancel_scope.cancel()


def test_values_fetched_in_turn_and_at_once_into_memory_files_arrive_whole_with_bounded_spares():
    """Eight values of 1.5 chunks each (random bytes, so a stale scratch would show), fetched one after the
    other and then all at once: each equals its original; at most SPARE_SCRATCH scratch buffers are kept."""

    async def test(store, address):
        size = CHUNK_SIZE + CHUNK_SIZE // 2
        originals = [os.urandom(size) for _ in range(8)]
        refs = [ValueRef("nm", address, store.put(value), size) for value in originals]
        links = DataLinks(secret=SECRET, role="node-monitor", peer_id="fetcher", shared_over=1 << 20)
        for ref, original in zip(refs, originals, strict=True):
            value = await links.fetch(ref)
            assert type(value) is shared.SharedValue and value[:] == original
        got: dict[int, bytes] = {}

        async def one(i: int) -> None:
            got[i] = (await links.fetch(refs[i]))[:]

        async with trio.open_nursery() as nursery:
            for i in range(len(refs)):
                nursery.start_soon(one, i)
        assert [got[i] == originals[i] for i in range(len(refs))] == [True] * len(refs)
        assert 1 <= len(links._scratch) <= SPARE_SCRATCH
        assert all(len(buffer) == CHUNK_SIZE for buffer in links._scratch)
        await links.aclose()

    trio.run(_serving, test)
