"""Client.scatter and SparrowExecutor.scatter against in-process services: a scattered value goes from the
client straight to a node monitor (the scheduler carries none of it), is read there by its dependents,
fetched by result(), and released when dropped, when the client closes, or with a lost client's session."""

from __future__ import annotations

import gc
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, SparrowExecutor, UploadFailed
from tests.runtime.until import until

from ..services.test_services import SECRET, services

BIG = 300_000


def _length(*blobs) -> int:
    return sum(map(len, blobs))


def _held(logics) -> int:
    return sum(len(logic.store) for logic in logics)


def _scheduler_bytes(scheduler) -> int:
    return sum(v for k, v in scheduler.stats.items() if k.startswith("bytes_"))


def test_a_scattered_value_skips_the_scheduler_and_its_dependent_reads_it_where_it_is():
    """Two 300 kB values scattered: one on each node monitor (spread), the scheduler's byte counters move by
    less than a kilobyte for them and their dependents, each dependent runs at its input's holder (no
    node monitor fetches anything), and result() gives the value back."""

    async def main():
        async with services() as (address, scheduler, logics), Client([address], secret=SECRET) as client:
            with trio.fail_after(30):
                before = _scheduler_bytes(scheduler)
                refs = await client.scatter_many([b"a" * BIG, b"b" * BIG])
                holders = {ref.handle._job.outcomes[0].ref.node_id for ref in refs}
                assert holders == {"nm0", "nm1"} and _held(logics) == 2
                assert client.traffic["bytes_uploaded"] > 2 * BIG
                jobs = [await client.submit_job([partial(_length, ref)]) for ref in refs]
                assert [await job.results() for job in jobs] == [[BIG], [BIG]]
                assert _scheduler_bytes(scheduler) - before < 1000
                assert client.traffic["bytes_fetched"] == 0
                assert await refs[0].result() == b"a" * BIG

    trio.run(main)


def test_a_scattered_value_is_released_when_its_reference_is_dropped_and_when_the_client_closes():
    """Dropping the reference releases the value at its node monitor; closing the client releases the rest."""

    async def main():
        async with services() as (address, _, logics):
            async with Client([address], secret=SECRET) as client:
                with trio.fail_after(30):
                    first = await client.scatter(b"a" * BIG)
                    second = await client.scatter(b"b" * BIG)
                    assert _held(logics) == 2
                    del first
                    gc.collect()  # a handle and its job refer to each other
                    await until(lambda: _held(logics) == 1)
                    assert await second.result() == b"b" * BIG
            assert _held(logics) == 0

    trio.run(main)


def test_a_lost_clients_scattered_values_go_with_its_session():
    """A client gone without releasing anything: once it is not back within the scheduler's client grace,
    its scattered values are dropped (they are tagged with its id as their session)."""

    async def main():
        async with services(client_grace=0.2) as (address, _, logics):
            async with Client([address], secret=SECRET) as client:

                async def no_release(refs):
                    return None

                client._links.release = no_release  # as if it died: no ReleaseValues reaches anyone
                refs = await client.scatter_many([b"a" * BIG] * 3)
                assert _held(logics) == 3
            assert _held(logics) == 3
            await until(lambda: _held(logics) == 0)
            del refs

    trio.run(main)


def test_a_value_over_the_node_monitors_memory_limit_is_refused_with_upload_failed_and_nothing_is_held():
    """Node monitors of 100 kB: scatter of 300 kB raises UploadFailed naming the node monitor and the store's
    sizes; the client goes on (a small job runs)."""

    async def main():
        async with (
            services(memory_limit=100_000) as (address, _, logics),
            Client([address], secret=SECRET) as client,
        ):
            with trio.fail_after(30):
                with pytest.raises(UploadFailed, match=r"node monitor nm\d refused the upload of 3\d\d,\d\d\d bytes"):
                    await client.scatter(b"a" * BIG)
                assert _held(logics) == 0 and all(logic.store.held == 0 for logic in logics)
                job = await client.submit_job([partial(_length, b"xy")])
                assert await job.results() == [2]

    trio.run(main)


def test_the_executor_scatters_and_its_futures_are_inputs_of_submit():
    """SparrowExecutor.scatter blocks until the value is kept and gives a done future whose value is kept
    there; submit takes it as an input (by reference), result() fetches it, and dropping it releases it."""
    from sparrow_runtime import NodeMonitorConfig
    from sparrow_runtime.services.local_cluster import LocalCluster

    with (
        LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=2, slots=1, dashboard=False
        ) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor,
    ):
        future = executor.scatter(b"z" * BIG)
        assert future.done() and future.kept
        assert executor.submit(_length, future, b"12").result(timeout=30) == BIG + 2
        assert future.result() == b"z" * BIG and not future.kept
        assert executor.client.traffic["bytes_sent"] < 1000  # the dependent went with a reference


def _add_one_in_place(array) -> float:
    array += 1  # an input array is writable (its worker's copy on write)
    return float(array.sum())


def test_a_big_scattered_array_goes_out_of_band_into_a_memory_file_and_its_dependents_may_change_their_copy():
    """A 4 MB numpy array scattered to a node monitor with process workers: uploaded packed (its buffer out of
    band, data/packed.py), kept in a sealed memory file, and taken in place by its dependents, each of which may
    write to its input (copy on write) without changing the kept value; a 100 kB one goes as a plain pickle."""
    np = pytest.importorskip("numpy")
    from sparrow_runtime import NodeMonitorConfig
    from sparrow_runtime.client.scatter import pickle_value
    from sparrow_runtime.data import packed
    from sparrow_runtime.services.local_cluster import LocalCluster

    array = np.arange(500_000, dtype=np.float64)
    assert pickle_value(array)[:4] == packed.MAGIC and pickle_value(array[:12_500])[:4] != packed.MAGIC
    with (
        LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=2, slots=1, dashboard=False
        ) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor,
    ):
        future = executor.scatter(array)
        sums = [executor.submit(_add_one_in_place, future) for _ in range(3)]
        assert [s.result(timeout=60) for s in sums] == [float(array.sum()) + array.size] * 3
        np.testing.assert_array_equal(future.result(), array)
