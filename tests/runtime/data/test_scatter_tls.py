"""Client.scatter over TLS: a scattered value is its uploader's user's: another user can neither fetch nor
release it, and its owner's dependents read it where it is."""

from __future__ import annotations

import gc
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, ValueLost
from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.wire.link_config import LinkConfig

from ..conftest import tls_services


def _length(blob) -> int:
    return len(blob)


def test_a_scattered_value_is_not_given_to_another_user_nor_released_by_one(cluster_certs):
    """alice scatters a value over TLS; bob, with his own certificate and its exact reference, gets ValueLost
    and his ReleaseValues changes nothing; alice's dependent reads it, and dropping her reference releases it."""

    async def main():
        async with (
            tls_services(cluster_certs) as (address, _, nodes),
            Client([address], tls=cluster_certs.tls("alice")) as alice,
        ):
            with trio.fail_after(30):
                ref = await alice.scatter(b"a" * 200_000)
                kept = ref.handle._job.outcomes[0].ref
                holder = nodes[int(kept.node_id[-1])]
                assert holder.store.get(kept.key).user == "alice"
                bob = DataLinks(link=LinkConfig(tls=cluster_certs.tls("bob")), role="client", peer_id="bob")
                with pytest.raises(ValueLost, match=r"holds no such value .*another user's"):
                    await bob.fetch(kept)
                await bob.release([kept])
                await trio.sleep(0.1)
                assert holder.store.get(kept.key) is not None
                await bob.aclose()
                job = await alice.submit_job([partial(_length, ref)])
                assert await job.results() == [200_000]
                assert await ref.result() == b"a" * 200_000
                del ref, job
                gc.collect()  # a handle and its job refer to each other
                while holder.store.get(kept.key) is not None:
                    await trio.sleep(0.02)

    trio.run(main)
