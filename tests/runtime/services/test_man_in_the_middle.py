"""An on-path attacker (a TCP proxy on loopback, tests/runtime/mitm.py) against a cluster on TLS: it
reads no payload or result, and cannot inject, rewrite or take over a frame (the link drops; its tasks
end with one outcome each). The same attacks on the insecure shared-secret mode succeed: those tests
keep that mode's documented limit honest (a single trusted host only)."""

import logging
import time
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    TaskFailed,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import SubmitJob
from sparrow_runtime.wire.task_codec import pack_task

from ..mitm import DOWN, UP, Proxy

SECRET = "mitm-test-secret"
PAYLOAD_MARKER = "PAYLOAD-MARKER-7d1c4a"
RESULT_MARKER = "RESULT-MARKER-9e2b5f"


def _mark(text):
    return RESULT_MARKER + text[::-1]


def _slow(x):
    time.sleep(0.4)
    return x


def _touch(path):
    with open(path, "w") as f:
        f.write("the attacker's task ran")


@asynccontextmanager
async def through_proxy(certs, mode, link, attack=None, **proxy_options):
    """A scheduler and one node monitor, with `link` ("client" or "node") going through a Proxy;
    yields (where the client dials, the client's credentials, the proxy)."""

    def credentials(name):
        return {"tls": certs.tls(name)} if mode == "tls" else {"secret": SECRET}

    async with trio.open_nursery() as nursery:
        scheduler = SchedulerLogic(seed=1)
        address = await nursery.start(
            partial(serve_scheduler, SchedulerConfig(link=LinkConfig(**credentials("sched"))), logic=scheduler)
        )
        proxy = Proxy(address, attack, **proxy_options)
        proxied = await nursery.start(proxy.serve)
        node = NodeMonitorConfig(
            link=LinkConfig(**credentials("nm0")),
            schedulers=[proxied if link == "node" else address],
            node_id="nm0",
            executor="thread",
        )
        await nursery.start(partial(serve_node_monitor, node, logic=NodeMonitorLogic(NodeMonitorConfig(slots=2))))
        yield (proxied if link == "client" else address), credentials("alice"), proxy
        nursery.cancel_scope.cancel()


def _one_outcome_each(outcomes, values):
    """Each task has exactly one outcome: its own value, or a TaskFailed that says why."""
    assert [o.index for o in outcomes] == list(range(len(values)))
    for outcome, value in zip(outcomes, values, strict=True):
        if outcome.ok:
            assert outcome.value == value
        else:
            assert isinstance(outcome.exception, TaskFailed) and str(outcome.exception)


@pytest.mark.parametrize("link", ["client", "node"])
@pytest.mark.parametrize("mode", ["tls", "plain"])
def test_a_proxy_reads_payloads_and_results_only_without_tls(cluster_certs, mode, link):
    """The bytes a proxy relays hold a task's argument and its result in plaintext mode, and neither on TLS."""

    async def main():
        async with through_proxy(cluster_certs, mode, link) as (target, credentials, proxy):
            async with Client([target], **credentials) as client:
                job = await client.submit_job([partial(_mark, PAYLOAD_MARKER)])
                assert [o.value for o in await job.outcomes()] == [_mark(PAYLOAD_MARKER)]
            seen = bytes(proxy.relayed[UP] + proxy.relayed[DOWN])
            assert len(seen) > 300  # the task and its result did pass through
            visible = PAYLOAD_MARKER.encode() in seen, RESULT_MARKER.encode() in seen
            assert visible == ((False, False) if mode == "tls" else (True, True))

    trio.run(main)


@pytest.mark.parametrize("mode", ["tls", "plain"])
def test_a_submit_injected_into_a_live_session_runs_only_without_tls(cluster_certs, mode, tmp_path, caplog):
    """Today's attack: a proxy adds a SubmitJob of its own to an authenticated session. Without TLS its
    task runs; on TLS the link drops instead, and the client's tasks in flight end with one outcome each."""
    planted = tmp_path / "planted"
    frames = [SubmitJob(77, [pack_task(partial(_touch, str(planted)))])]

    async def main():
        async with through_proxy(cluster_certs, mode, "client", "inject", after=0.2, frames=frames) as (
            target,
            credentials,
            proxy,
        ):
            async with Client([target], **credentials) as client:
                job = await client.submit_job([partial(_slow, i) for i in range(2)])
                with trio.fail_after(5):
                    await proxy.attacked.wait()
                _one_outcome_each(await job.outcomes(), [0, 1])
                with trio.move_on_after(1.5):
                    while not planted.exists():
                        await trio.sleep(0.05)
            assert planted.exists() == (mode == "plain")
            if mode == "tls":
                assert proxy.connections >= 2  # the client dialed again after the drop

    with caplog.at_level(logging.INFO):
        trio.run(main)


@pytest.mark.parametrize(
    ("link", "attack"), [("client", "flip-up"), ("client", "flip-down"), ("node", "flip-up"), ("node", "flip-down")]
)
def test_a_rewritten_byte_on_tls_drops_the_link_and_never_forges_a_result(cluster_certs, link, attack, caplog):
    """One byte flipped in either direction of either link: the TLS record fails (logged as such), the
    link drops, and every task of the job in flight ends with one outcome: its own value, or a clear failure."""

    async def main():
        async with through_proxy(cluster_certs, "tls", link, attack, after=0.2) as (target, credentials, proxy):
            async with Client([target], **credentials) as client:
                await trio.sleep(0.25)
                job = await client.submit_job([partial(_slow, i) for i in range(3)])
                with trio.fail_after(5):
                    await proxy.attacked.wait()
                with trio.fail_after(20):
                    _one_outcome_each(await job.outcomes(), [0, 1, 2])
                again = await client.submit_job([partial(_slow, 5)])  # the cluster still serves
                assert [o.value for o in await again.outcomes()] == [5]
            assert proxy.connections >= 2  # the dropped link was dialed again

    with caplog.at_level(logging.INFO):
        trio.run(main)
    assert any("lost: TLS: " in r.getMessage() and "\n" not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", ["tls", "plain"])
def test_a_proxy_takes_over_a_session_after_its_client_left_only_without_tls(cluster_certs, mode, tmp_path):
    """The client finishes and goes; the proxy keeps the scheduler's side open and speaks for it (on TLS,
    replaying the client's last record first). Without TLS its job runs; on TLS nothing it sends is read."""
    planted = tmp_path / "planted"
    frames = [SubmitJob(78, [pack_task(partial(_touch, str(planted)))])]

    async def main():
        async with through_proxy(cluster_certs, mode, "client", "takeover", frames=frames) as (
            target,
            credentials,
            proxy,
        ):
            async with Client([target], **credentials) as client:
                job = await client.submit_job([partial(_slow, 1)])
                assert [o.value for o in await job.outcomes()] == [1]
            with trio.fail_after(5):
                await proxy.attacked.wait()
            with trio.move_on_after(1.5):
                while not planted.exists():
                    await trio.sleep(0.05)
            assert planted.exists() == (mode == "plain")

    trio.run(main)
