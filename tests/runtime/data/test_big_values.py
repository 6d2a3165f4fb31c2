"""A 256 MB result end to end with real processes: kept by the node monitor whose worker made it, given to
a dependent without passing through the client, and fetched whole by result() in chunks."""

from __future__ import annotations

import gc

import pytest

from sparrow_runtime import LocalCluster, SparrowExecutor

SIZE = 256 * 1024 * 1024


def _zeros(n: int) -> bytes:
    return bytes(n)


def _summary(blob: bytes) -> tuple[int, int]:
    return len(blob), blob.count(0)


@pytest.mark.slow
def test_a_256_mb_result_works_end_to_end_and_is_released_when_dropped():
    """The 256 MB result (four times the default frame limit) reaches its dependent on the cluster and
    the caller of result(); the client fetched it once (result()), not for the dependent; dropping the
    future releases it at its node monitor."""
    with LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster:
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
            blob = ex.submit(_zeros, SIZE)
            summary = ex.submit(_summary, blob)
            assert summary.result(timeout=240) == (SIZE, SIZE)
            assert ex.client._links.fetched == 0
            value = blob.result(timeout=120)
            assert len(value) == SIZE and ex.client._links.bytes_fetched > SIZE
            book = ex.client._logic.values
            assert len(book) == 1
            del blob, value
            gc.collect()
            assert len(book) == 0 and book.released == 1
