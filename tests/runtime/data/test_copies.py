"""A node monitor's fetches (data/copies.py, DataLinks(copies=...)): a value its tasks take again is fetched
once, overlapping fetches share one transfer, copies stay within their byte limit and idle time, and the
scratch buffers that chunks bound for memory files come through are reused without mixing values up."""

from __future__ import annotations

import os
from functools import partial

import pytest
import trio
import trio.testing

from sparrow_runtime.data import shared
from sparrow_runtime.data.copies import COPY_MAX, Copies, copy_limit
from sparrow_runtime.data.links import SPARE_SCRATCH, DataLinks
from sparrow_runtime.data.server import DataServer
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.errors import ValueLost
from sparrow_runtime.wire.limits import CHUNK_SIZE
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import ValueRef
from tests.runtime.until import until

SECRET = b"c" * 32
needs_memfd = pytest.mark.skipif(not shared.AVAILABLE, reason="memory files are Linux only")


def _value(size: int, fill: int = 7) -> shared.SharedValue:
    return shared.share(bytes([fill]) * size)


def test_a_kept_copy_is_given_back_for_its_address_key_and_size_only():
    """get() finds a copy by holder address, key and size; another address, key or size finds none."""
    copies = Copies(1000)
    value = _value(100)
    assert copies.put("a:1", b"k", value, now=0.0)
    assert copies.get("a:1", b"k", 100, now=1.0) is value
    assert copies.get("b:1", b"k", 100, now=1.0) is None
    assert copies.get("a:1", b"j", 100, now=1.0) is None
    assert copies.get("a:1", b"k", 99, now=1.0) is None
    assert copies.hits == 1 and copies.held == 100 and len(copies) == 1


def test_only_read_only_memory_files_become_copies_and_none_over_the_limit():
    """A bytearray (a task could change it) is never kept, nor a value larger than the whole limit."""
    copies = Copies(1000)
    assert not copies.put("a:1", b"k", bytearray(100), now=0.0)
    assert not copies.put("a:1", b"big", _value(1001), now=0.0)
    assert len(copies) == 0 and copies.held == 0


def test_the_least_recently_used_copies_make_room_for_a_new_one():
    """At the limit, the copies used longest ago go first; a copy used lately stays."""
    copies = Copies(300)
    for i, key in enumerate((b"a", b"b", b"c")):
        copies.put("h:1", key, _value(100), now=float(i))
    assert copies.get("h:1", b"a", 100, now=3.0) is not None  # a is now the latest used
    copies.put("h:1", b"d", _value(150), now=4.0)
    assert [k for k in (b"a", b"b", b"c", b"d") if copies.get("h:1", k, 150 if k == b"d" else 100, 5.0)] == [
        b"a",
        b"d",
    ]
    assert copies.held == 250


def test_copies_unused_for_their_idle_time_expire_and_a_used_one_stays():
    """expire(now) drops the copies not taken since now - idle, and only them."""
    copies = Copies(1000, idle=10.0)
    copies.put("h:1", b"old", _value(100), now=0.0)
    copies.put("h:1", b"new", _value(100), now=0.0)
    copies.get("h:1", b"new", 100, now=5.0)
    assert copies.expire(now=12.0) == 1
    assert copies.get("h:1", b"old", 100, now=12.0) is None
    assert copies.get("h:1", b"new", 100, now=12.0) is not None
    assert copies.expire(now=30.0) == 1 and copies.held == 0


def test_negative_limits_are_refused():
    """A negative byte limit or idle time is a clear ValueError."""
    with pytest.raises(ValueError, match="must be >= 0"):
        Copies(-1)
    with pytest.raises(ValueError, match="must be >= 0"):
        Copies(10, idle=-1.0)


async def _serving(test) -> None:
    store = ValueStore(1 << 30)
    server = DataServer(store, link=LinkConfig(secret=SECRET), node_id="nm")
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle_stream, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(60):
            await test(server, store, f"127.0.0.1:{port}")
        nursery.cancel_scope.cancel()


def _links(**options) -> DataLinks:
    return DataLinks(
        link=LinkConfig(secret=SECRET), role="node-monitor", peer_id="fetcher", shared_over=1000, **options
    )


@needs_memfd
def test_a_value_fetched_again_comes_from_its_copy_and_its_holder_serves_it_once():
    """Two tasks' fetches of one big value, one after the other: the holder serves it once; without copies
    it serves it twice."""

    async def test(server, store, address):
        key = store.put(b"x" * 300_000)
        ref = ValueRef("nm", address, key, 300_000)
        links = _links(copies=1 << 20)
        first = await links.fetch(ref)
        second = await links.fetch(ref)
        assert second is first and bytes(second) == b"x" * 300_000
        await until(lambda: server.stats["served"] >= 1)  # counted after the server's last send
        assert server.stats["served"] == 1 and links.copies is not None and links.copies.hits == 1
        await links.aclose()
        plain = _links()
        await plain.fetch(ref)
        await plain.fetch(ref)
        await until(lambda: server.stats["served"] >= 3)
        assert server.stats["served"] == 3
        await plain.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_overlapping_fetches_of_one_value_share_one_transfer():
    """Five fetches of one value at once: one transfer; all five get the same read-only value."""

    async def test(server, store, address):
        key = store.put(b"y" * 2_000_000)
        ref = ValueRef("nm", address, key, 2_000_000)
        links = _links(copies=1 << 22)
        got: list = []

        async def one() -> None:
            got.append(await links.fetch(ref))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(one)
        assert len(got) == 5 and all(value is got[0] for value in got)
        assert type(got[0]) is shared.SharedValue and bytes(got[0][:3]) == b"yyy"
        assert server.stats["served"] == 1
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_a_lost_value_fails_every_overlapping_fetch_and_is_not_kept():
    """Three fetches at once of a value its holder does not have: each raises ValueLost naming why; none is
    kept, and the holder was asked once."""

    async def test(server, store, address):
        ref = ValueRef("nm", address, b"\1" * 16, 2_000_000)
        links = _links(copies=1 << 22)
        errors: list[str] = []

        async def one() -> None:
            try:
                await links.fetch(ref)
            except ValueLost as exc:
                errors.append(str(exc))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
        assert len(errors) == 3 and all("holds no such value" in e for e in errors)
        assert server.stats["missing"] == 1 and links.copies is not None and len(links.copies) == 0
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_a_fetch_waiting_for_a_cancelled_transfer_fetches_the_value_itself():
    """The fetch others wait for is stopped (its task cancelled) mid-transfer: its waiter then fetches the
    value itself instead of failing or waiting forever."""

    async def test(server, store, address):
        key = store.put(b"z" * 2_000_000)
        ref = ValueRef("nm", address, key, 2_000_000)
        links = _links(copies=1 << 22)
        transfers = []
        real = links._fetch

        async def transfer(ref, user=None):  # the first transfer never ends by itself
            transfers.append(ref)
            if len(transfers) == 1:
                await trio.sleep_forever()
            return await real(ref, user)

        links._fetch = transfer  # type: ignore[method-assign]
        got: list = []

        async def first(scope: trio.CancelScope) -> None:
            with scope:
                await links.fetch(ref)

        async def waiter() -> None:
            got.append(await links.fetch(ref))

        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()
            nursery.start_soon(first, scope)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert len(transfers) == 1 and not got  # the waiter waits for the first transfer
            scope.cancel()
        assert len(transfers) == 2 and len(got) == 1 and bytes(got[0][-3:]) == b"zzz"
        assert server.stats["served"] == 1
        await links.aclose()

    trio.run(_serving, test)


@needs_memfd
def test_copies_unused_for_their_idle_time_are_dropped_by_the_timer():
    """expire_copies() (the node monitor's timer) drops a copy unused for COPY_IDLE; the next fetch goes to
    the holder again."""

    async def test(server, store, address):
        key = store.put(b"w" * 300_000)
        ref = ValueRef("nm", address, key, 300_000)
        links = _links(copies=1 << 20)
        await links.fetch(ref)
        assert links.copies is not None
        links.copies.idle = 0.05
        await trio.sleep(0.1)
        links.expire_copies()
        assert len(links.copies) == 0 and links.copies.held == 0
        await links.fetch(ref)
        assert server.stats["served"] == 2
        await links.aclose()

    trio.run(_serving, test)


def test_a_node_monitor_keeps_a_quarter_of_its_memory_limit_in_copies_and_at_most_1_gib():
    """copy_limit: memory_limit / 4, capped at COPY_MAX (a big host does not hold gigabytes of copies)."""
    assert copy_limit(4_000_000) == 1_000_000
    assert copy_limit(0) == 0
    assert copy_limit(64 * 1024**3) == COPY_MAX == 1024**3


@needs_memfd
def test_values_fetched_in_turn_and_at_once_into_memory_files_arrive_whole_with_bounded_spares():
    """Eight values of 1.5 chunks each (random bytes, so a stale scratch would show), fetched one after the
    other and then all at once: each equals its original; at most SPARE_SCRATCH scratch buffers are kept."""

    async def test(server, store, address):
        size = CHUNK_SIZE + CHUNK_SIZE // 2
        originals = [os.urandom(size) for _ in range(8)]
        refs = [ValueRef("nm", address, store.put(value), size) for value in originals]
        links = _links()
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
