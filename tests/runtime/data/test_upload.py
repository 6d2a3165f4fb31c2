"""A client's upload at its node monitor, sans-I/O (data/upload.py's Upload, the store's reservations): what
is kept, under whose name, and every limit an upload must stay within."""

from __future__ import annotations

import os

import pytest

from sparrow_runtime.data.shared import AVAILABLE as SHARED
from sparrow_runtime.data.shared import SharedValue
from sparrow_runtime.data.store import StoreFull, ValueStore
from sparrow_runtime.data.transfer import TransferError, chunks
from sparrow_runtime.data.upload import Refused, Upload
from sparrow_runtime.wire.limits import MESSAGE_OVERHEAD
from sparrow_runtime.wire.messages import FetchValue, PutValue, ValueChunk, ValueHeader


def _upload(
    store: ValueStore, size: int, *, max_value: int = 1 << 30, send_limit: int = 1 << 20, shared: bool = False
) -> Upload:
    return Upload(
        store,
        PutValue(size),
        user="alice",
        session="client-1",
        max_value=max_value,
        frame_limit=1 << 20,
        send_limit=send_limit,
        name="nm0",
        shared=shared,
    )


@pytest.mark.skipif(not SHARED, reason="memory files are Linux only")
def test_a_shared_upload_is_kept_in_a_sealed_memory_file():
    """shared=True (an upload over the node monitor's share limit): the value is kept in a sealed memory file
    (read-only: its workers and its peers on this host take it without a copy) with the same bytes."""
    store = ValueStore(10 << 20)
    value = bytes(range(256)) * 8000
    upload = _upload(store, len(value), shared=True)
    for part in chunks(value, upload.header.chunk):
        upload.feed(part)
    kept = store.get(upload.key).value
    assert type(kept) is SharedValue and bytes(kept) == value and store.held == len(value)
    with pytest.raises(PermissionError):
        os.pwrite(kept.fd, b"x", 0)


def test_an_upload_is_kept_once_its_last_chunk_came_with_the_links_user_and_session():
    """The header tells chunks that fit the link; the value is kept at the last chunk (not before), as
    alice's, in the client's session (so ReleaseSession drops it), and the store holds exactly its size."""
    store = ValueStore(10_000)
    value = bytes(range(256)) * 10
    upload = _upload(store, len(value), send_limit=MESSAGE_OVERHEAD + 1000)
    assert upload.header == ValueHeader(len(value), 1000)  # a chunk's frame fits the link
    parts = list(chunks(value, upload.header.chunk))
    assert len(parts) > 2
    assert store.held == len(value) and len(store) == 0  # reserved, not kept yet
    assert [upload.feed(part) for part in parts] == [False] * (len(parts) - 1) + [True]
    kept = store.get(upload.key)
    assert bytes(kept.value) == value and kept.user == "alice" and kept.session == "client-1"
    assert store.get(upload.key, "bob") is None
    assert store.held == len(value)
    assert store.release_session("client-1") == 1 and store.held == 0


def test_an_empty_value_is_kept_at_once():
    """0 bytes: no chunk comes; the key is there with the header."""
    store = ValueStore(10)
    upload = _upload(store, 0)
    assert upload.key is not None and bytes(store.get(upload.key).value) == b""


def test_an_upload_over_max_value_is_refused_before_anything_is_reserved():
    """A size over the node monitor's max_value: Refused naming both sizes; nothing reserved."""
    store = ValueStore(1 << 40)
    with pytest.raises(Refused, match=r"upload of 2,000 bytes: over its max_value of 1,000 bytes"):
        _upload(store, 2000, max_value=1000)
    assert store.held == 0


def test_uploads_under_way_cannot_together_pass_the_memory_limit():
    """Two uploads of 60 bytes into a store of 100: the second is refused while the first is on its way
    (its reservation counts), naming the sizes; once the first is abandoned, its room is back."""
    store = ValueStore(100)
    first = _upload(store, 60)
    with pytest.raises(
        Refused, match=r"nm0: the node monitor's value store is full: 60 of 100 bytes held, so an upload"
    ):
        _upload(store, 60)
    first.abandon()
    first.abandon()  # twice: given back once
    assert store.held == 0
    second = _upload(store, 60)
    second.feed(ValueChunk(0, b"x" * 60))
    assert store.held == 60 and len(store) == 1
    second.abandon()  # kept already: nothing to give back
    assert store.held == 60


@pytest.mark.parametrize(
    "bad",
    [ValueChunk(1, b"x" * 10), ValueChunk(0, b"x" * 11), ValueChunk(0, b"x" * 9), FetchValue(b"k" * 16)],
    ids=["out of order", "too long", "too short", "another message"],
)
def test_a_chunk_that_breaks_the_upload_raises_transfer_error_and_abandoning_gives_the_room_back(bad):
    """Chunk 1 before 0, a chunk longer or shorter than the header said, a FetchValue halfway: TransferError
    (the server then closes the link); abandon() gives back the reservation."""
    store = ValueStore(100)
    upload = _upload(store, 20, send_limit=MESSAGE_OVERHEAD + 10)
    assert upload.header.chunk == 10
    with pytest.raises(TransferError):
        upload.feed(bad)
    upload.abandon()
    assert store.held == 0 and len(store) == 0


def test_a_chunk_past_the_last_is_refused():
    """Once every chunk came the upload takes no more."""
    store = ValueStore(100)
    upload = _upload(store, 10)
    assert upload.feed(ValueChunk(0, b"x" * 10))
    with pytest.raises(TransferError):
        upload.feed(ValueChunk(1, b"x"))


def test_the_store_reserves_and_puts_under_a_reservation():
    """reserve counts in `held` and is refused past the limit; put(reserved=True) keeps the value within it."""
    store = ValueStore(100)
    store.reserve(70)
    with pytest.raises(StoreFull, match="70 of 100 bytes held, so an upload of 31 bytes was refused"):
        store.reserve(31)
    with pytest.raises(StoreFull, match="so a result of 31 bytes"):
        store.put(b"x" * 31)
    key = store.put(b"y" * 70, reserved=True)
    assert store.held == 70
    store.release([key])
    assert store.held == 0
