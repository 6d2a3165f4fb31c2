"""SparrowExecutor packs a job's tasks with one TaskPacker (wire/task_codec.py) and checks the job's size by its
payloads' lengths, not by encoding it: map's limit holds at the byte, before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor
from sparrow_runtime.client.job import FRAME_OVERHEAD_PER_JOB, FRAME_OVERHEAD_PER_TASK
from sparrow_runtime.wire.task_codec import TaskPacker

PAD = b"x" * 20_000  # each task's payload over a fifth of the smallest max_frame (65,536 bytes)


def _touch(path: str, pad: bytes) -> str:
    Path(path).touch()
    return path


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=1, slots=1, dashboard=False
    ) as cluster:
        yield cluster


def test_a_map_chunk_at_the_frame_limit_runs_and_one_byte_over_is_refused_before_it_is_sent(cluster, tmp_path):
    """A chunk whose counted size is exactly `max_frame` runs; with `max_frame` one byte smaller, map raises
    ValueError naming the limit at the call, and none of its tasks ran."""
    paths = [str(tmp_path / f"ran-{i}") for i in range(4)]
    pack = TaskPacker(_touch).pack
    size = sum(len(pack((p, PAD))) for p in paths) + FRAME_OVERHEAD_PER_TASK * len(paths) + FRAME_OVERHEAD_PER_JOB
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, max_frame=size - 1) as executor:
        with pytest.raises(ValueError, match=f"over the frame limit of {size - 1} bytes"):
            executor.map(_touch, paths, [PAD] * len(paths), chunksize=len(paths))
        assert list(executor.map(len, ["ab"], timeout=60)) == [2]  # the executor goes on serving
    assert not any(Path(p).exists() for p in paths)
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, max_frame=size) as executor:
        assert list(executor.map(_touch, paths, [PAD] * len(paths), chunksize=len(paths), timeout=60)) == paths
