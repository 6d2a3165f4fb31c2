"""Results kept at the node monitor that made them, end to end with in-process services: inline or kept,
fetched when asked, given to dependents as references, released each way, and the memory limit."""

from __future__ import annotations

import gc
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, Constraint, TaskFailed, ValueLost
from sparrow_runtime.client import core
from tests.runtime.until import until

from ..services.test_services import SECRET, services

BIG = 200_000  # over the default inline limit of 64 KiB


def _blob(n: int) -> bytes:
    return b"x" * n


def _length(*blobs) -> int:
    return sum(map(len, blobs))


async def _services(test, **options) -> None:
    """Run `test(address, node logics)` against a scheduler and two thread node monitors in this process."""
    async with services(**options) as (address, _, logics):
        with trio.fail_after(30):
            await test(address, logics)


async def _with_client(test, **options) -> None:
    """Run `test(client, node logics)` with a Client of those services."""

    async def with_client(address, logics):
        async with Client([address], secret=SECRET) as client:
            await test(client, logics)

    await _services(with_client, **options)


def _held(logics) -> int:
    return sum(len(logic.store) for logic in logics)


def test_a_small_result_travels_inline_and_a_big_one_stays_where_it_was_made():
    """Under the inline limit the outcome carries the value; over it, a reference (node, address, key,
    size), and the value is in that node monitor's store; results() fetches it whole either way, and
    the client's traffic counts the fetched bytes beside the outcomes received."""

    async def test(client, logics):
        job = await client.submit_job([partial(_blob, 10), partial(_blob, BIG)])
        assert await job.results() == [b"x" * 10, b"x" * BIG]
        small, big = job._job.outcomes
        assert client.traffic["bytes_fetched"] == big.ref.size > BIG
        assert client.traffic["bytes_received"] < BIG  # the big value came by fetch, not in its outcome
        assert small.ref is None and small.payload
        assert big.ref is not None and big.payload == b"" and big.ref.size > BIG
        assert big.ref.node_id in ("nm0", "nm1") and len(big.ref.key) == 16
        holder = logics[int(big.ref.node_id[-1])]
        assert len(holder.store) == 1 and holder.store.get(big.ref.key) is not None

    trio.run(_with_client, test)


def test_a_dependent_gets_references_and_its_node_monitor_fetches_the_inputs():
    """A task taking two kept results runs with both values, wherever it lands: its node monitor takes them
    from its own store or from the holder over a data link; the client's link carries no value."""

    async def test(client, logics):
        first = await client.submit_job([partial(_blob, BIG), partial(_blob, BIG + 1)])
        second = await client.submit_job([partial(_length, first[0], first[1])])
        assert await second.results() == [2 * BIG + 1]
        assert client._links.fetched == 0  # nothing came to the client
        assert _held(logics) == 2

    trio.run(_with_client, test)


def test_values_are_released_when_their_job_handle_is_dropped():
    """Dropping the JobHandle releases its kept values at their node monitor (ReleaseValues)."""

    async def test(client, logics):
        job = await client.submit_job([partial(_blob, BIG) for _ in range(3)])
        await job.wait()
        assert _held(logics) == 3
        del job
        gc.collect()
        await until(lambda: _held(logics) == 0)

    trio.run(_with_client, test)


def test_a_value_is_held_while_a_dependent_needs_it_even_if_its_owner_is_gone():
    """The producer's handle dropped before its dependent ran: its value stays until the dependent is done."""

    async def test(client, logics):
        first = await client.submit_job([partial(_blob, BIG)])
        second = await client.submit_job([partial(_length, first[0])])
        del first
        gc.collect()  # the handle lives on in the dependent's record of its input until that is done
        assert await second.results() == [BIG]
        assert _held(logics) == 1
        gc.collect()
        await until(lambda: _held(logics) == 0)

    trio.run(_with_client, test)


def test_a_closed_client_releases_every_value_it_held():
    """Closing the client releases what its handles still held."""

    async def test(address, logics):
        async with Client([address], secret=SECRET) as client:
            job = await client.submit_job([partial(_blob, BIG) for _ in range(2)])
            await job.wait()
            assert _held(logics) == 2
        assert _held(logics) == 0
        assert job.done()

    trio.run(_services, test)


def test_a_client_whose_release_outlasts_its_close_still_closes_every_data_link(monkeypatch):
    """Closing takes at most CLOSE_TIMEOUT: a release that takes longer (a frozen node monitor) is given up, and the
    links kept open for fetching values are closed all the same (none is left to the garbage collector)."""
    monkeypatch.setattr(core, "CLOSE_TIMEOUT", 0.2)

    async def test(address, logics):
        async def frozen_release(refs):
            await trio.sleep_forever()

        async with Client([address], secret=SECRET) as client:
            job = await client.submit_job([partial(_blob, BIG)])
            assert await job.results() == [b"x" * BIG]  # fetched: its link is kept for the next fetch
            kept = [conn for conns in client._links._idle.values() for conn in conns]
            assert kept and not any(conn.closed for conn in kept)
            client._links.release = frozen_release
        assert all(conn.closed for conn in kept) and client._links._idle == {}

    trio.run(_services, test)


def test_a_release_that_ends_after_its_links_closed_closes_its_link():
    """Links closed while a release was on its way (the client closing meanwhile): the release's link is closed
    when it is done, not kept where nobody would close it."""

    async def test(client, logics):
        job = await client.submit_job([partial(_blob, BIG)])
        await job.wait()
        (ref,) = [outcome.ref for outcome in job._job.outcomes]
        links = client._links
        await links.aclose()
        opened = []
        connect = links._link

        async def recorded(ref):
            conn, reused = await connect(ref)
            opened.append(conn)
            return conn, reused

        links._link = recorded
        await links.release([ref])
        assert len(opened) == 1 and opened[0].closed and links._idle == {}
        await until(lambda: _held(logics) == 0)  # the release itself went through

    trio.run(_with_client, test)


def test_a_lost_clients_values_are_released_by_the_scheduler_after_its_grace():
    """A client gone without releasing anything (its data links dead): once it is not back within the
    scheduler's client grace, every node monitor drops its session's values (ReleaseSession)."""

    async def test(address, logics):
        async def no_release(refs):
            return None

        async with Client([address], secret=SECRET) as client:
            client._links.release = no_release  # as if it died: no ReleaseValues reaches anyone
            job = await client.submit_job([partial(_blob, BIG) for _ in range(4)])
            await job.wait()
            assert _held(logics) == 4
        assert _held(logics) == 4
        await until(lambda: _held(logics) == 0)
        assert sum(logic.stats["values_released"] for logic in logics) == 4

    trio.run(partial(_services, test, client_grace=0.2))


def test_a_value_its_node_monitor_no_longer_has_is_recomputed_when_fetched():
    """results() of a value gone from its node monitor: the task is run again from its call, once, and
    the new value is fetched (the outcome now refers to it)."""

    async def test(client, logics):
        job = await client.submit_job([partial(_blob, BIG)])
        await job.wait()
        ref = job._job.outcomes[0].ref
        logics[int(ref.node_id[-1])].store.release([ref.key])
        assert await job.results() == [b"x" * BIG]
        assert client._logic.recomputed == 1 and job._job.outcomes[0].ref != ref

    trio.run(_with_client, test)


_runs: list[int] = []


def _only_once(n: int) -> bytes:
    """A result the first time (thread executors: this process), a failure after."""
    _runs.append(n)
    if len(_runs) > 1:
        raise RuntimeError("not again")
    return b"x" * n


def test_a_lost_value_whose_recompute_fails_gives_value_lost_naming_its_node_monitor_and_why():
    """The value gone and its task failing when run again: results() raises ValueLost naming the node
    monitor, that it held no such value, and the recompute's failure."""
    _runs.clear()

    async def test(client, logics):
        job = await client.submit_job([partial(_only_once, BIG)])
        await job.wait()
        ref = job._job.outcomes[0].ref
        logics[int(ref.node_id[-1])].store.release([ref.key])
        why = f"(?s)at node monitor {ref.node_id} .*holds no such value.*recomputing it failed.*not again"
        with pytest.raises(ValueLost, match=why):
            await job.results()

    trio.run(_with_client, test)


def test_past_the_memory_limit_a_result_fails_with_the_sizes_and_the_node_monitor_goes_on():
    """memory_limit 300 kB: the first 200 kB result is kept, the second fails with TaskFailed naming the
    store's sizes (not retried); small results go on, and once the first is released a big one fits again."""

    async def test(client, logics):
        first = await client.submit_job([partial(_blob, BIG)], constraints=None)
        await first.wait()
        holder = first._job.outcomes[0].ref.node_id
        pinned = {"constraints": Constraint(node_monitors=(holder,))}
        second = await client.submit_job([partial(_blob, BIG)], **pinned)
        outcome = (await second.outcomes())[0]
        assert isinstance(outcome.exception, TaskFailed) and outcome.attempts == 1
        assert "value store is full" in str(outcome.exception) and "300,000 bytes" in str(outcome.exception)
        assert await (await client.submit_job([partial(_blob, 5)], **pinned)).results() == [b"xxxxx"]
        del first
        gc.collect()
        await until(lambda: _held(logics) == 0)
        third = await client.submit_job([partial(_blob, BIG)], **pinned)
        assert await third.results() == [b"x" * BIG]

    trio.run(partial(_with_client, test, memory_limit=300_000))


def test_a_task_whose_input_never_arrives_is_stopped_while_fetching_and_its_slot_goes_back_to_work():
    """A dependent whose input's holder accepts the connection and says nothing: a forced cancel (a Stop,
    as a timeout's) ends it while its node monitor is still fetching, and the one slot runs the next task."""
    from sparrow_runtime import TaskCancelled
    from sparrow_runtime.client.job import build_submit
    from sparrow_runtime.data.dependent import Slot, pack_dependent
    from sparrow_runtime.wire.messages import ValueRef
    from sparrow_runtime.wire.task_codec import pack_task

    async def test(address, logics):
        silent = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]  # never accepts, never answers
        ghost = ValueRef("ghost", f"127.0.0.1:{silent.socket.getsockname()[1]}", b"g" * 16, 10)
        async with Client([address], secret=SECRET) as client:
            payload = pack_dependent(pack_task(_length, (Slot(0),)), [ghost])
            pinned = [Constraint(node_monitors=("nm0",))]
            stuck = client.send_job(build_submit([payload], "", 0, None, pinned))
            await until(lambda: logics[0].busy == 1)
            stuck.cancel(force=True)
            outcome = (await stuck.outcomes())[0]
            assert isinstance(outcome.exception, TaskCancelled)
            await until(lambda: logics[0].busy == 0, timeout=2.0)  # not the 5 s handshake timeout of the fetch
            assert logics[0].stats["stop_requests"] == 1
            again = await client.submit_job([partial(_blob, 3)], constraints=pinned)
            assert await again.results() == [b"xxx"]
        await silent.aclose()

    trio.run(partial(_services, test, slots=1))


def test_a_bug_while_fetching_inputs_fails_that_task_once_and_the_node_monitor_goes_on(monkeypatch, caplog):
    """Making the worker's call raises (a bug, simulated): the dependent fails once, naming where, it is
    logged, and the next tasks run on the same node monitors."""
    from sparrow_runtime.services import node_monitor

    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(node_monitor, "worker_payload", broken)

    async def test(client, logics):
        first = await client.submit_job([partial(_blob, BIG)])
        second = await client.submit_job([partial(_length, first[0])], retries=0)
        outcome = (await second.outcomes())[0]
        assert isinstance(outcome.exception, TaskFailed) and outcome.attempts == 1
        assert "failed while fetching the task's inputs" in str(outcome.exception)
        assert await (await client.submit_job([partial(_blob, 4)])).results() == [b"xxxx"]

    trio.run(_with_client, test)
    assert "RuntimeError: simulated bug" in caplog.text


def test_dropping_the_handle_of_a_job_that_kept_no_value_costs_the_client_nothing(monkeypatch):
    """A finished job whose results all travelled inline has nothing to release: dropping its handle hands
    the trio thread no work; a job with a kept value still releases it."""
    dropped = []
    real = Client.dropped

    def spy(self, job, task):
        dropped.append(job.n_tasks)
        real(self, job, task)

    monkeypatch.setattr(Client, "dropped", spy)

    async def test(client, logics):
        small = await client.submit_job([partial(_blob, 10), partial(_blob, 20)])
        await small.wait()
        del small
        gc.collect()
        assert dropped == []
        big = await client.submit_job([partial(_blob, BIG)])
        await big.wait()
        del big
        gc.collect()
        assert dropped == [1]
        await until(lambda: _held(logics) == 0)

    trio.run(_with_client, test)
