"""The data plane over TLS: node monitors fetch each other's values with their certificates, and a client
is given, and may release, only the values of its own certificate's user."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from sparrow_runtime import Client, ValueLost
from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.wire.link_config import LinkConfig

from ..conftest import tls_services

BIG = 200_000


def _blob(n: int) -> bytes:
    return b"x" * n


def _length(*blobs) -> int:
    return sum(map(len, blobs))


def test_a_dependent_runs_on_values_fetched_over_tls_and_another_user_gets_none_of_them(cluster_certs):
    """alice's two 200 kB results feed her dependent (node monitors fetch over TLS); bob, with his own
    certificate, asking alice's node monitor for her value by its exact reference gets ValueLost, and his
    ReleaseValues for it changes nothing; the admin may fetch it."""

    async def main():
        async with (
            tls_services(cluster_certs) as (address, _, nodes),
            Client([address], tls=cluster_certs.tls("alice")) as alice,
        ):
            with trio.fail_after(30):
                first = await alice.submit_job([partial(_blob, BIG), partial(_blob, BIG)])
                second = await alice.submit_job([partial(_length, first[0], first[1])])
                assert await second.results() == [2 * BIG]
                ref = first._job.outcomes[0].ref
                holder = nodes[int(ref.node_id[-1])]

                def links(name: str) -> DataLinks:
                    return DataLinks(link=LinkConfig(tls=cluster_certs.tls(name)), role="client", peer_id=name)

                bob = links("bob")
                with pytest.raises(ValueLost, match=r"holds no such value .*another user's"):
                    await bob.fetch(ref)
                await bob.release([ref])
                await trio.sleep(0.1)
                assert holder.store.get(ref.key) is not None
                await bob.aclose()
                root = links("root")
                assert len(await root.fetch(ref)) == ref.size
                await root.aclose()
                assert await first.results() == [b"x" * BIG] * 2

    trio.run(main)
