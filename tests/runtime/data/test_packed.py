"""Values packed with their buffers out of band (data/packed.py): read back in place, writable where their
bytes are, plain pickles read as before, and lengths that overrun the bytes refused."""

from __future__ import annotations

import os

import cloudpickle
import numpy as np
import pytest

from sparrow_runtime.data import packed, shared


def _pack(value) -> bytearray:
    data, buffers = packed.dump(value)
    fd = os.memfd_create("t")
    try:
        packed.write(fd, data, buffers)
        size = packed.packed_size(data, buffers)
        assert os.fstat(fd).st_size <= size
        return bytearray(os.pread(fd, size, 0).ljust(size, b"\0"))
    finally:
        os.close(fd)


def test_arrays_come_back_as_views_of_the_packed_bytes_and_writable_where_they_are():
    """Two arrays and a frame-like dict: equal values; each array's data is inside the packed buffer (no
    copy), aligned, and writable because the bytearray is."""
    value = {"a": np.arange(100_000, dtype=np.float64), "b": np.ones((50, 40), dtype=np.int32), "tag": "x"}
    buf = _pack(value)
    back = packed.loads(buf)
    assert back["tag"] == "x"
    for name in ("a", "b"):
        np.testing.assert_array_equal(back[name], value[name])
        start = np.frombuffer(buf, dtype=np.uint8).ctypes.data
        inside = start <= back[name].ctypes.data < start + len(buf)
        assert inside and (back[name].ctypes.data - start) % packed.ALIGN == 0 and back[name].flags.writeable
    back["a"][0] = 7.0  # in place, in the buffer
    assert packed.loads(buf)["a"][0] == 7.0


def test_a_value_packed_in_memory_has_the_bytes_written_to_a_file():
    """packed.pack (an upload's bytes) makes exactly what packed.write puts in a file, so loads reads both alike."""
    value = [np.arange(30_001, dtype=np.float64), "gap", np.ones(7, dtype=np.int8), np.zeros(0)]
    data, buffers = packed.dump(value)
    made = packed.pack(data, buffers)
    assert len(made) == packed.packed_size(data, buffers) and bytearray(made) == _pack(value)
    back = packed.loads(made)
    assert back[1] == "gap" and all(np.array_equal(a, b) for a, b in zip(back[::2], value[::2], strict=True))


def test_a_plain_pickle_is_read_as_before():
    assert packed.loads(cloudpickle.dumps([1, "two", b"3"])) == [1, "two", b"3"]


def test_a_packed_value_whose_lengths_overrun_its_bytes_is_refused():
    buf = _pack(np.arange(1000))
    with pytest.raises(ValueError, match="overrun"):
        packed.loads(buf[: len(buf) // 2])
    lying = bytearray(buf)
    lying[4:8] = (10**9).to_bytes(4, "big")  # a billion buffers
    with pytest.raises(ValueError, match="buffers"):
        packed.loads(lying)


@pytest.mark.skipif(not shared.AVAILABLE, reason="memory files (memfd) are Linux only")
def test_a_packed_value_in_a_private_map_of_a_sealed_file_gives_writable_arrays_and_leaves_the_file_alone():
    """What a worker gets for an input: arrays it may change (copy on write), while the file stays the same."""
    data, buffers = packed.dump(np.zeros(10_000))
    fd = shared.new_fd(packed.packed_size(data, buffers))
    packed.write(fd, data, buffers)
    shared.seal_fd(fd)
    mine = shared.adopt(os.dup(fd), 1 << 30, private=True)
    array = packed.loads(mine)
    array[:] = 5.0
    again = packed.loads(shared.adopt(fd, 1 << 30))
    assert array.sum() == 50_000.0 and again.sum() == 0.0
