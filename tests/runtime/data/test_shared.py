"""Values in sealed memory files (data/shared.py), and how a process executor hands big values to its workers
and takes their big results that way (worker_pool.py, worker_main.py): no frame, no copy through the socket."""

from __future__ import annotations

import gc
import mmap
import os
import socket
from functools import partial

import cloudpickle
import pytest
import trio

from sparrow_runtime.data import shared
from sparrow_runtime.data.dependent import Slot, worker_payload
from sparrow_runtime.services.worker_pool import ProcessExecutor, _Worker
from sparrow_runtime.wire.messages import SYSTEM
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

from ..services.test_worker_pool import _with_executor

pytestmark = pytest.mark.skipif(not shared.AVAILABLE, reason="memory files (memfd) are Linux only")

BIG = 2 * 1024 * 1024


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_shared_value_reads_as_its_bytes_and_its_file_cannot_be_changed():
    """share() copies a value into a sealed file: it reads back the same, and nobody can write or resize it."""
    value = shared.share(b"abc" * 1000)
    assert len(value) == 3000 and bytes(memoryview(value)[:6]) == b"abcabc" and value[-3:] == b"abc"
    with pytest.raises(PermissionError):
        os.pwrite(value.fd, b"x", 0)
    with pytest.raises(PermissionError):
        os.ftruncate(value.fd, 10)


def test_a_value_put_together_in_a_writable_file_is_sealed_and_its_file_closed_with_it():
    """Writable + seal: the written bytes, read-only; the descriptor closes when the value is collected."""
    file = shared.Writable(10)
    file.write(b"hello", 0)
    file.write(memoryview(b"world"), 5)
    value = file.seal()
    fd = value.fd
    assert bytes(value) == b"helloworld"
    del value, file
    gc.collect()
    assert not _is_open(fd)


def test_a_writable_file_dropped_unsealed_is_closed():
    """A transfer that broke halfway leaves no descriptor behind."""
    file = shared.Writable(10)
    fd = file.fd
    del file
    gc.collect()
    assert not _is_open(fd)


def test_adopt_seals_a_file_nobody_can_write_and_refuses_one_still_mapped_writable():
    """A worker that did not seal its result: sealed on arrival if it can be; else refused (it could still
    change the value), and the descriptor is closed either way."""
    fd = os.memfd_create("t", os.MFD_ALLOW_SEALING)
    os.write(fd, b"x" * 100)
    value = shared.adopt(fd, 1000)
    assert bytes(value) == b"x" * 100
    with pytest.raises(PermissionError):
        os.pwrite(value.fd, b"y", 0)

    fd = os.memfd_create("t", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 100)
    writer = mmap.mmap(fd, 100)  # a writable shared map: the write seal cannot be added
    with pytest.raises(ValueError, match="may still change"):
        shared.adopt(fd, 1000)
    assert not _is_open(fd)
    writer.close()


@pytest.mark.parametrize(("size", "limit", "why"), [(0, 10, "0 bytes"), (11, 10, "11 bytes")])
def test_adopt_refuses_an_empty_file_or_one_over_the_limit(size, limit, why):
    fd = shared.sealed_fd(b"z" * size) if size else os.memfd_create("t", os.MFD_ALLOW_SEALING)
    with pytest.raises(ValueError, match=why):
        shared.adopt(fd, limit)
    assert not _is_open(fd)


def test_adopt_refuses_a_descriptor_that_is_not_a_memory_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"data")
    with pytest.raises(ValueError, match="not a memory file"):
        shared.adopt(os.open(path, os.O_RDONLY), 100)


async def _with_sharing_executor(body, share_over=BIG // 2):
    await _with_executor(partial(ProcessExecutor, 1, share_over=share_over), body)


def _launch(executor, payload, inputs=None):
    outcome = []
    done = trio.Event()

    def finished(result):
        outcome.append(result)
        done.set()

    executor.launch(payload, finished, inputs)
    return outcome, done


def _sizes(*values):
    return [len(value) for value in values]


def test_big_inputs_cross_to_a_worker_as_memory_files_and_a_big_result_comes_back_as_one():
    """A dependent's inputs: a shared value and big bytes go as memory files, small bytes in the frame; the
    worker sees every value. Its big result arrives as a SharedValue (no frame), a small one inline."""

    async def body(executor):
        kept = shared.share(cloudpickle.dumps(b"a" * BIG))
        inputs = [kept, cloudpickle.dumps(b"b" * BIG), cloudpickle.dumps(b"c")]
        template = cloudpickle.dumps((_sizes, (Slot(0), Slot(1), Slot(2)), {}))
        outcome, done = _launch(executor, worker_payload(template), inputs)
        await done.wait()
        assert unpack_outcome(outcome[0]) == [BIG, BIG, 1]
        assert bytes(kept[:4]) == cloudpickle.dumps(b"a" * BIG)[:4]  # ours is untouched

        outcome, done = _launch(executor, pack_task(bytes, (BIG,)))
        await done.wait()
        assert outcome[0].ok and type(outcome[0].payload) is shared.SharedValue
        assert unpack_outcome(outcome[0]) == bytes(BIG)

        outcome, done = _launch(executor, pack_task(bytes, (10,)))
        await done.wait()
        assert type(outcome[0].payload) is bytes and unpack_outcome(outcome[0]) == bytes(10)

    trio.run(_with_sharing_executor, body)


def test_a_result_said_to_be_shared_without_a_memory_file_fails_that_task_alone():
    """A worker that claims a shared result but sent no memory file: the task fails (SYSTEM), naming why,
    and the node monitor's loop never waits for it."""
    executor = ProcessExecutor(1, share_over=BIG)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    worker = _Worker(None, None, ours)  # type: ignore[arg-type]  # only its side socket is used
    outcome = executor._shared_outcome(worker)
    assert not outcome.ok and outcome.failure == SYSTEM and "sent none" in outcome.error
    theirs.send(b"\0")  # a byte, but no descriptor with it
    outcome = executor._shared_outcome(worker)
    assert not outcome.ok and outcome.failure == SYSTEM and "none came" in outcome.error
    theirs.close()
    ours.close()


def _add_one_in_place(array):
    array += 1  # an input array is writable (copy on write of its memory file)
    return float(array.sum())


def test_a_big_array_result_is_kept_with_its_buffer_out_of_band_and_read_in_place_by_its_dependent():
    """An array over share_over comes back as a packed memory file (packed.py); given to a dependent, the
    array it gets is writable, and the kept value is unchanged by what the dependent did to its copy."""
    import numpy as np

    from sparrow_runtime.data import packed

    async def body(executor):
        outcome, done = _launch(executor, pack_task(np.ones, (BIG // 8,)))
        await done.wait()
        kept = outcome[0].payload
        assert type(kept) is shared.SharedValue and kept[: len(packed.MAGIC)] == packed.MAGIC
        template = cloudpickle.dumps((_add_one_in_place, (Slot(0),), {}))
        outcome, done = _launch(executor, worker_payload(template), [kept])
        await done.wait()
        assert unpack_outcome(outcome[0]) == 2.0 * (BIG // 8)
        assert packed.loads(kept).sum() == BIG // 8

    trio.run(_with_sharing_executor, body)
