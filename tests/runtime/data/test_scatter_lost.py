"""A scattered value's holder SIGKILLed (real processes): with its bytes kept at the client (the default) the
value is uploaded again from them (not through the scheduler) and the dependent runs; without, the dependent
fails naming the lost input."""

from __future__ import annotations

import os
import signal
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, DependencyFailed, LocalCluster, ValueLost

BIG = 300_000


def _length(blob: bytes) -> int:
    return len(blob)


def _scatter_then_kill_holder(keep: bool, then) -> None:
    """Scatter a value on a cluster of 2 process node monitors, SIGKILL its holder, then `then(client, ref,
    holder)`."""
    with LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster:

        async def main():
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                with trio.fail_after(60):
                    ref = await client.scatter(b"s" * BIG, keep=keep)
                    holder = ref.handle._job.outcomes[0].ref.node_id
                    os.kill(cluster.node_monitor_pids[cluster.node_ids.index(holder)], signal.SIGKILL)
                    await trio.sleep(0.5)  # its links close: the scheduler drops it
                    await then(client, ref, holder)

        trio.run(main)


@pytest.mark.slow
def test_a_scattered_value_lost_with_its_holder_is_put_back_from_the_clients_bytes_and_the_dependent_runs():
    """The holder dies after the upload: the dependent's node monitor cannot fetch it, the client uploads the
    value again from its kept bytes to the node monitor left, and the dependent runs on it; result() then
    fetches it from its new holder."""

    async def then(client, ref, holder):
        job = await client.submit_job([partial(_length, ref)])
        assert await job.results() == [BIG]
        assert client._logic.recomputed == 1
        assert (
            client.traffic["bytes_uploaded"] > 2 * BIG and client.traffic["bytes_sent"] < BIG
        )  # not via the scheduler
        assert ref.handle._job.outcomes[0].ref.node_id != holder
        assert await ref.result() == b"s" * BIG

    _scatter_then_kill_holder(True, then)


@pytest.mark.slow
def test_a_scattered_value_without_its_bytes_kept_fails_its_dependent_naming_the_input_and_its_holder():
    """keep=False: nothing to put it back from; the dependent fails once with DependencyFailed naming args[0],
    its cause a ValueLost naming the dead node monitor; result() raises ValueLost too."""

    async def then(client, ref, holder):
        job = await client.submit_job([partial(_length, ref)])
        outcome = (await job.outcomes())[0]
        assert isinstance(outcome.exception, DependencyFailed)
        assert outcome.exception.path == "args[0]"
        assert isinstance(outcome.exception.__cause__, ValueLost)
        assert f"at node monitor {holder}" in str(outcome.exception)
        assert client._logic.recomputed == 0
        with pytest.raises(ValueLost, match=f"at node monitor {holder}"):
            await ref.result()

    _scatter_then_kill_holder(False, then)


@pytest.mark.slow
def test_result_of_a_scattered_value_lost_with_its_holder_uploads_it_again_and_fetches_it():
    """No dependent: result() finds the holder gone, uploads the value again from the kept bytes, and fetches
    it from its new holder."""

    async def then(client, ref, holder):
        assert await ref.result() == b"s" * BIG
        assert client._logic.recomputed == 1 and ref.handle._job.outcomes[0].ref.node_id != holder

    _scatter_then_kill_holder(True, then)
