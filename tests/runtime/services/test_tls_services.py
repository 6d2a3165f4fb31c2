"""A cluster on TLS: every link authenticated by the cluster CA, each peer only what its certificate's
role and user allow; a peer that fails the TLS handshake gets one line and the others are served."""

import logging
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, NodeMonitorConfig, serve_node_monitor
from sparrow_runtime.errors import HandshakeError
from sparrow_runtime.wire.handshake import connect
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import (
    CancelJob,
    JobAccepted,
    JobRejected,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
    SubmitJob,
)
from sparrow_runtime.wire.task_codec import pack_task

from ..conftest import tls_services


def _slow(x):
    time.sleep(0.3)
    return x


def _square(x):
    return x * x


async def _raw(address, tls, role="client"):
    return await connect(address, link=LinkConfig(tls=tls, handshake_timeout=3), role=role, peer_id=f"raw-{role}")


async def _ask(conn, msg):
    await conn.send_now([msg])
    with trio.fail_after(3):
        return await conn.receive_one()


def test_a_tls_cluster_runs_jobs_as_the_certificates_user(cluster_certs):
    """Tasks run over TLS; a job that names no user runs as the user of the client's certificate."""

    async def main():
        async with (
            tls_services(cluster_certs) as (address, _, _),
            Client([address], tls=cluster_certs.tls("alice")) as client,
        ):
            job = await client.submit_job([partial(_slow, i) for i in range(4)])
            assert [j.user for j in (await client.status()).jobs] == ["alice"]
            assert [o.value for o in await job.outcomes()] == list(range(4))

    trio.run(main)


def test_bob_cannot_submit_as_alice_and_gets_the_reason(cluster_certs):
    """A job of bob's naming user alice is rejected, saying who bob is; one naming bob runs."""

    async def main():
        async with tls_services(cluster_certs) as (address, _, _):
            conn = await _raw(address, cluster_certs.tls("bob"))
            reply = await _ask(conn, SubmitJob(1, [pack_task(partial(_square, 2))], user="alice"))
            assert type(reply) is JobRejected
            assert "authenticated as user 'bob'" in reply.reason and "'alice'" in reply.reason
            assert type(await _ask(conn, SubmitJob(2, [pack_task(partial(_square, 2))], user="bob"))) is JobAccepted
            await conn.aclose()

    trio.run(main)


def test_bob_can_neither_see_nor_cancel_alices_job_and_an_admin_sees_all(cluster_certs):
    """Bob's status shows none of alice's jobs and his cancels of every ref leave her job running to
    its results; alice sees hers, an admin sees both users' jobs."""

    async def main():
        async with (
            tls_services(cluster_certs) as (address, scheduler, _),
            Client([address], tls=cluster_certs.tls("alice")) as alice,
        ):
            job = await alice.submit_job([partial(_slow, i) for i in range(2)])
            bob = await _raw(address, cluster_certs.tls("bob"))
            assert type(await _ask(bob, SubmitJob(100, [pack_task(partial(_slow, 9))]))) is JobAccepted
            seen = await _ask(bob, StatusRequest())
            assert type(seen) is StatusReply and [j.user for j in seen.jobs] == ["bob"]
            own_ids = {j.job_id for j in seen.jobs}
            for ref in range(0, 4):
                await bob.send_now([CancelJob(ref, force=True)])
            for job_id in scheduler.jobs:  # and by job id, in case a ref were one
                if job_id not in own_ids:
                    await bob.send_now([CancelJob(job_id, force=True)])
            assert [j.user for j in (await alice.status()).jobs] == ["alice"]
            root = await _raw(address, cluster_certs.tls("root"))
            every = await _ask(root, StatusRequest())
            assert sorted(j.user for j in every.jobs) == ["alice", "bob"]
            assert [o.value for o in await job.outcomes()] == [0, 1]
            await bob.aclose()
            await root.aclose()

    trio.run(main)


def test_a_client_certificate_cannot_register_as_a_node_monitor(cluster_certs, caplog):
    """A client's certificate claiming the node-monitor role is refused in the handshake with one
    line, and never reaches the scheduler's node monitors."""

    async def main():
        async with tls_services(cluster_certs, n_nodes=1) as (address, scheduler, _):
            refused = r"the client certificate .alice. may not connect as a node-monitor"
            with pytest.raises(HandshakeError, match=refused):
                await _raw(address, cluster_certs.tls("alice"), role="node-monitor")
            assert [n.node_id for n in scheduler.nodes.values()] == ["nm0"]

    with caplog.at_level(logging.WARNING):
        trio.run(main)


def test_an_admin_certificate_connects_only_as_a_client(cluster_certs):
    """An admin may see every job but cannot pose as a node monitor either."""

    async def main():
        async with tls_services(cluster_certs, n_nodes=1) as (address, _, _):
            with pytest.raises(HandshakeError, match=r"the admin certificate .root. may not connect as a node-monitor"):
                conn = await _raw(address, cluster_certs.tls("root"), role="node-monitor")
                await _ask(conn, RegisterNodeMonitor("fake", 4))

    trio.run(main)


@pytest.mark.parametrize(
    "who, match",
    [
        ("other-ca", "is not signed by this cluster's CA|refused this side's certificate"),
        ("plaintext", "not completed within"),
    ],
)
def test_a_stranger_gets_one_line_and_the_cluster_keeps_serving(cluster_certs, who, match):
    """A client from another CA, or one speaking plaintext, fails with one line; alice's jobs run
    before and after it."""

    async def main():
        async with (
            tls_services(cluster_certs, n_nodes=1, handshake_timeout=1.0) as (address, _, _),
            Client([address], tls=cluster_certs.tls("alice")) as alice,
        ):
            first = await (await alice.submit_job([partial(_square, 3)])).outcomes()
            if who == "other-ca":
                tls = cluster_certs.tls("alice", other_ca=True)
                with pytest.raises(HandshakeError, match=match) as caught:
                    await connect(address, link=LinkConfig(tls=tls, handshake_timeout=2), role="client", peer_id="x")
            else:
                with pytest.raises(HandshakeError, match=match) as caught:
                    await connect(
                        address, link=LinkConfig(secret=b"guess", handshake_timeout=0.5), role="client", peer_id="x"
                    )
            assert "\n" not in str(caught.value)
            second = await (await alice.submit_job([partial(_square, 4)])).outcomes()
            assert [o.value for o in first + second] == [9, 16]

    trio.run(main)


def test_a_node_monitor_from_another_ca_is_refused_and_keeps_retrying(cluster_certs, caplog):
    """A node monitor with another CA's credentials never registers; the scheduler logs why in one line."""

    async def main():
        async with tls_services(cluster_certs, n_nodes=1) as (address, scheduler, _):
            with trio.move_on_after(1.0):
                await serve_node_monitor(
                    NodeMonitorConfig(
                        link=LinkConfig(tls=cluster_certs.tls("sched", other_ca=True)),
                        schedulers=[address],
                        node_id="intruder",
                        executor="thread",
                    )
                )
            assert [n.node_id for n in scheduler.nodes.values()] == ["nm0"]

    with caplog.at_level(logging.WARNING):
        trio.run(main)
    refusals = [r.getMessage() for r in caplog.records if "refused connection" in r.getMessage()]
    assert refusals and all("\n" not in line and "TLS" in line for line in refusals)
