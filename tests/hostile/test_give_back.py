"""GiveBack (tag 37) from a hostile node monitor against a live cluster: malformed ones, ones for jobs that never
existed, for tasks of other node monitors' jobs (the steady client's, running at nm0 and nm1), and a flood. Each
is refused (Error, the link closes) or dropped as stale; the cluster keeps serving and the steady client's every
task still ends once with its right value (the module fixture checks)."""

from __future__ import annotations

import time

import pytest

from sparrow_runtime.wire.limits import MAX_ID
from sparrow_runtime.wire.messages import (
    Error,
    GiveBack,
    Registered,
    RegisterNodeMonitor,
    StatusReply,
    StatusRequest,
)

from .peers import MODES, LiveCluster, serving


@pytest.fixture(scope="module", params=MODES)
def cluster(request):
    # the steady client's tasks take 0.5 ms each, so that its jobs are in flight most of the time: a job of 20 no-op
    # tasks, bound whole to one idle node monitor, ends before a GiveBack that read its id can reach the scheduler
    # (test_giving_back_other_node_monitors_tasks_..., 0 of 200 refused in a CI run under TLS)
    yield from serving(request.param, values=80, task_seconds=0.0005)


def _registered(cluster, peer, name: str = "hostile-gb") -> None:
    peer.handshake("node-monitor", name)
    peer.send(RegisterNodeMonitor(name, 1, (), "instance-" + name))
    assert isinstance(peer.receive_one(), Registered)


@pytest.mark.parametrize(
    "array",
    [
        [37],  # no fields
        [37, 1],  # no task
        [37, -1, 0],  # a negative job id
        [37, 1, MAX_ID + 1],  # a task id over the limit
        [37, "1", 0],  # a string
    ],
)
def test_a_malformed_give_back_closes_the_link(cluster: LiveCluster, array: list) -> None:
    """A GiveBack that does not decode: the scheduler closes the link; it still serves."""
    with cluster.peer(cluster.scheduler, "node-monitor") as peer:
        _registered(cluster, peer)
        peer.send_arrays([array])
        assert any(isinstance(m, Error) for m in peer.read_until_closed())
    assert cluster.scheduler_answers()


def test_a_give_back_of_a_job_that_never_existed_is_refused(cluster: LiveCluster) -> None:
    """GiveBack for the largest job id: Error naming it, and the link closes."""
    with cluster.peer(cluster.scheduler, "node-monitor") as peer:
        _registered(cluster, peer)
        peer.send(GiveBack(MAX_ID, 0))
        got = peer.read_until_closed()
    assert any(isinstance(m, Error) and "never had" in m.reason for m in got)
    assert cluster.scheduler_answers()


def _latest_job(cluster: LiveCluster) -> int:
    """The id of the latest job submitted to the scheduler (ids count from 1; the steady client's, in flight most
    of the time), from the counters a client sees (under TLS it sees no other user's jobs)."""
    with cluster.peer(cluster.scheduler) as peer:
        peer.handshake("client", "prober")
        peer.send(StatusRequest())
        reply = peer.receive_one()
    assert isinstance(reply, StatusReply)
    return reply.counters.get("jobs", 0)


def test_giving_back_other_node_monitors_tasks_is_refused_and_loses_none_of_them(cluster: LiveCluster) -> None:
    """The hostile node monitor gives back every task of the latest job, the steady client's (its tasks run at
    nm0 and nm1, never at the attacker): Error and the link closes, unless the job ended meanwhile (stale); none of
    those tasks runs twice or is lost (the fixture's steady record). Until it was refused five times."""
    refused = 0
    for _ in range(200):  # until 5 were refused (a job ends in a few ms: it may end before the GiveBacks come)
        if refused >= 5:
            break
        job = _latest_job(cluster)
        if not job:
            time.sleep(0.01)
            continue
        with cluster.peer(cluster.scheduler, "node-monitor") as peer:
            _registered(cluster, peer)
            peer.send(*[GiveBack(job, t) for t in range(20)])  # the steady client's jobs have 20 tasks
            peer.shutdown_write()
            got = peer.read_until_closed()
        refused += any(isinstance(m, Error) and "not launched to this node monitor" in m.reason for m in got)
    assert refused == 5
    assert cluster.scheduler_answers()


def test_a_flood_of_stale_give_backs_is_dropped_and_the_link_stays(cluster: LiveCluster) -> None:
    """20,000 GiveBacks of the steady client's first job (finished by now) in a few writes: dropped as stale, no
    Error, and the scheduler still answers on other links."""
    deadline = time.monotonic() + 10
    while _latest_job(cluster) < 2:  # the steady client submits job 2 only once job 1 has all its outcomes
        assert time.monotonic() < deadline, "the steady client's second job never came"
        time.sleep(0.01)
    with cluster.peer(cluster.scheduler, "node-monitor") as peer:
        _registered(cluster, peer, "flooder")
        for _ in range(20):
            peer.send(*[GiveBack(1, t % 20) for t in range(1000)])
        assert cluster.scheduler_answers()
        peer.shutdown_write()
        got = peer.read_until_closed()
    assert not any(isinstance(m, Error) for m in got)
