"""A 256 MB result end to end with real processes: kept by the node monitor whose worker made it, given to
a dependent without passing through the client, and fetched whole by result() in chunks."""

from __future__ import annotations

import gc
import time

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
    with (
        LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        blob = ex.submit(_zeros, SIZE)
        summary = ex.submit(_summary, blob)
        assert summary.result(timeout=240) == (SIZE, SIZE)
        assert ex.client._links.fetched == 0
        value = blob.result(timeout=120)
        assert len(value) == SIZE and ex.client._links.bytes_fetched > SIZE
        book = ex.client._logic.values
        assert len(book) == 1
        del blob, value
        gc.collect()  # the future's __del__ hands the release to the client's trio thread: wait for it
        deadline = time.monotonic() + 30
        while len(book) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(book) == 0 and book.released == 1


def _length(*blobs) -> int:
    return sum(map(len, blobs))


@pytest.mark.slow
def test_on_unix_sockets_each_node_monitor_serves_its_values_beside_its_own_socket():
    """transport="unix": the data listener is a socket PATH.data beside the node monitor's; values kept on
    both node monitors reach one dependent, and result() fetches one over its socket."""
    with (
        LocalCluster(node_monitors=2, slots=1, dashboard=False, transport="unix") as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        blobs = [ex.submit(_zeros, 300_000 + i) for i in range(4)]
        assert ex.submit(_length, *blobs).result(timeout=60) == 4 * 300_000 + 6
        addresses = {b._job.outcomes[b._task].ref.address for b in blobs}
        assert all(a.startswith("unix:") and a.endswith(".data") for a in addresses)
        assert len(blobs[0].result()) == 300_000
