"""A node monitor that lies about its max_frame, against a live cluster whose steady client runs jobs
throughout: a tiny limit is refused at the handshake, and one at the floor gets no reservation for a
task it could not take, so a job of big tasks runs on the honest node monitors and nothing fails as
too large. In each security mode (peers.MODES)."""

from __future__ import annotations

import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client
from sparrow_runtime.wire.limits import MIN_PEER_FRAME
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    Error,
    Registered,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
)

from .peers import MODES, LiveCluster, RawPeer, serving

BIG = 100 * 1024  # bytes of each big task's payload: over the liar's limit, far under the honest ones'


@pytest.fixture(scope="module", params=MODES)
def cluster(request):
    yield from serving(request.param)


def test_a_node_monitor_telling_a_tiny_max_frame_is_refused_at_the_handshake(cluster):
    """A node monitor that tells 1 KiB gets one Error naming the value and the floor, and is closed."""
    with cluster.peer(cluster.scheduler, "node-monitor") as peer:
        _, reply = peer.authenticate("node-monitor", "liar", max_frame=1024)
        assert isinstance(reply, Error)
        assert "its max_frame of 1024 bytes is under the floor of 65536 bytes" in reply.reason
        assert peer.read_until_closed() == []


def test_a_node_monitor_at_the_floor_is_left_out_of_jobs_of_big_tasks(cluster):
    """A node monitor registered with the floor's 64 KiB, holding 4 slots and never asking for a task:
    a job of 8 tasks of 100 KiB each runs on the two honest node monitors, every value right, and the
    liar receives no reservation of that job; the scheduler failed nothing as too large."""
    user = "big" if cluster.mode == "insecure" else "attacker-client"  # under TLS, its certificate's
    with cluster.peer(cluster.scheduler, "node-monitor", timeout=0.2) as liar:
        liar.handshake("node-monitor", "liar", max_frame=MIN_PEER_FRAME)
        liar.send(RegisterNodeMonitor("liar", 4, (), "liar-process"))
        assert isinstance(liar.receive_one(), Registered)
        values = trio.run(_run_big_job, cluster, user)
        assert values == [BIG + i for i in range(8)]
        held = _reservations_until_quiet(liar)
    assert user not in {msg.user for msg in held}
    assert _stats(cluster).get("too_large", 0) == 0


async def _run_big_job(cluster: LiveCluster, user: str) -> list:
    async with Client([cluster.scheduler], **cluster.credentials("attacker-client")) as client:
        job = await client.submit_job([partial(len, b"x" * (BIG + i)) for i in range(8)], user=user)
        with trio.fail_after(20):
            return [outcome.value for outcome in await job.outcomes()]


def _reservations_until_quiet(peer: RawPeer) -> list:
    """The EnqueueReservations `peer` received, read until it hears nothing for its socket timeout."""
    got = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            batch = peer.receive()
        except TimeoutError:
            break
        got += [msg for msg in batch if type(msg) is EnqueueReservations]
    return got


def _stats(cluster: LiveCluster) -> dict:
    with cluster.peer(cluster.scheduler) as peer:
        peer.handshake("client", "prober")
        peer.send(StatusRequest())
        reply = peer.receive_one()
    assert isinstance(reply, StatusReply)
    return reply.counters
