"""Stalls, freezes and peers that misbehave without being malicious: every task still ends with
exactly one outcome, and the rest of the cluster keeps working.

Real processes where the behaviour is the operating system's (SIGSTOP of a scheduler or a node
monitor, as a GC pause, a slow disk or a VM pause would do), trio services in-process otherwise.
Each test with services runs in both security modes (peers.MODES: the shared secret, and TLS)."""

from __future__ import annotations

import logging
import signal
import socket
import sys
import time
from functools import partial

import pytest
import trio

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup  # trio's dependency on Python 3.10

from sparrow_runtime import Client, LinkConfig, NodeMonitorConfig, SchedulerConfig, serve_node_monitor, serve_scheduler
from sparrow_runtime.errors import RegistrationRefused
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    Error,
    GetTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    Registered,
    RegisterNodeMonitor,
    SubmitJob,
    TaskToNode,
)
from sparrow_runtime.wire.task_codec import pack_task

from ..cli.conftest import Running, clean_env
from .peers import MODES, SECRET, Credentials

ADDRESS = r"(\d+\.\d+\.\d+\.\d+:\d+)"


@pytest.fixture(scope="module", params=MODES)
def creds(request):
    """The credentials of one security mode (the tests that use it run in each)."""
    found = Credentials(request.param)
    yield found
    found.cleanup()


@pytest.fixture
def processes(tmp_path, creds):
    """Start `sparrow` services as processes with `creds`: `start(args) -> Running`; all are killed at
    the end."""
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET)
    secret_file.chmod(0o600)
    if creds.mode == "insecure":
        env = clean_env(tmp_path, SPARROW_SECRET_FILE=str(secret_file), SPARROW_INSECURE="1")
    else:
        env = clean_env(tmp_path)
    started: list[Running] = []

    def start(args: list[str]) -> tuple[Running, str]:
        started.append(Running(args + creds.flags("scheduler" if args[0] == "scheduler" else "nm0"), env))
        return started[-1], started[-1].wait_for(ADDRESS).group(1)

    yield start
    for r in started:
        r.stop(signal.SIGKILL, timeout=5)
        r.close()


def _small_cluster(processes, node_timeout: float, scheduler_timeout: float):
    scheduler, address = processes(["scheduler", "--listen", "127.0.0.1:0", "--node-timeout", str(node_timeout)])
    nodes = [
        processes(
            [
                "node-monitor",
                "--scheduler",
                address,
                "--id",
                f"nm-{i}",
                "--slots",
                "2",
                "--executor",
                "thread",
                "--scheduler-timeout",
                str(scheduler_timeout),
                "--heartbeat-interval",
                "0.2",
            ]
        )[0]
        for i in range(2)
    ]
    return scheduler, address, nodes


async def _run_while(address: str, creds: Credentials, freeze, n_tasks: int = 300, **client_options) -> list:
    """Submit `n_tasks` tasks of 10 ms, call `freeze()` (sync, it sleeps) once some have run, and
    return every outcome (the JobHandle refuses a second outcome for a task)."""
    async with Client([address], **creds.of("steady"), **client_options) as client:
        job = await client.submit_job([partial(time.sleep, 0.01)] * n_tasks)
        while job.n_done < 20:
            await trio.sleep(0.01)
        await trio.to_thread.run_sync(freeze)
        with trio.fail_after(60):  # before the fix: some outcomes never came
            return await job.outcomes()


def _pause(running: Running, seconds: float) -> None:
    running.process.send_signal(signal.SIGSTOP)
    time.sleep(seconds)
    running.process.send_signal(signal.SIGCONT)


@pytest.mark.slow
def test_a_frozen_scheduler_loses_no_outcome(processes, creds):
    """The issue's trigger: the scheduler frozen 4 s while node monitors drop it after 2 s of silence.
    Their last OutcomeToScheduler messages arrive with their goodbye (Error) in one batch; those outcomes
    used to be dropped with the batch (6 of 300 per round, the client waiting forever)."""
    scheduler, address, _ = _small_cluster(processes, node_timeout=30, scheduler_timeout=2)
    outcomes = trio.run(_run_while, address, creds, partial(_pause, scheduler, 4.0))
    assert len(outcomes) == 300
    failed = [o.exception for o in outcomes if not o.ok]
    assert failed == []  # the client relaunched what the freeze cost (at least once)


async def _status(address: str, creds: Credentials):
    async with Client([address], **creds.of("steady")) as client:
        return await client.status()


@pytest.mark.slow
def test_a_scheduler_paused_past_its_node_timeout_keeps_its_node_monitors(processes, creds):
    """The scheduler SIGSTOPped 3 s with a 2 s timeout on its node monitors (which wait 10 s for it):
    when it wakes, the silence was its own pause, not theirs (wire/liveness.py), so it drops none of
    them, and every task ends ok at its first attempt."""
    scheduler, address, _ = _small_cluster(processes, node_timeout=2, scheduler_timeout=10)
    outcomes = trio.run(partial(_run_while, scheduler_timeout=10), address, creds, partial(_pause, scheduler, 3.0))
    assert len(outcomes) == 300 and all(o.ok and o.attempts == 1 for o in outcomes)
    status = trio.run(_status, address, creds)
    assert sorted(n.node_id for n in status.nodes) == ["nm-0", "nm-1"]
    assert status.counters.get("node_monitors_lost", 0) == 0 and status.counters["node_monitors_registered"] == 2


@pytest.mark.slow
def test_a_scheduler_paused_past_the_node_monitors_timeout_gets_them_back(processes, creds):
    """The scheduler SIGSTOPped 3 s while its node monitors drop it after 2 s of silence: they
    re-register when it wakes, and the client loses no task (what the pause cost is relaunched)."""
    scheduler, address, _ = _small_cluster(processes, node_timeout=2, scheduler_timeout=2)
    outcomes = trio.run(partial(_run_while, scheduler_timeout=10), address, creds, partial(_pause, scheduler, 3.0))
    assert len(outcomes) == 300 and all(o.ok for o in outcomes)
    status = trio.run(_status, address, creds)
    assert sorted(n.node_id for n in status.nodes) == ["nm-0", "nm-1"]


@pytest.mark.slow
def test_a_paused_node_monitor_keeps_its_scheduler(processes, creds):
    """A node monitor SIGSTOPped 3 s with a 2 s timeout on its scheduler (which waits 10 s for it):
    when it wakes, nothing came from the scheduler meanwhile (it only echoes heartbeats), but the
    silence was the node monitor's own pause (wire/liveness.py): it keeps the link, so the scheduler
    loses no node monitor and every task ends ok at its first attempt."""
    _, address, nodes = _small_cluster(processes, node_timeout=10, scheduler_timeout=2)
    outcomes = trio.run(partial(_run_while, scheduler_timeout=10), address, creds, partial(_pause, nodes[0], 3.0))
    assert len(outcomes) == 300 and all(o.ok and o.attempts == 1 for o in outcomes)
    status = trio.run(_status, address, creds)
    assert sorted(n.node_id for n in status.nodes) == ["nm-0", "nm-1"]
    assert status.counters.get("node_monitors_lost", 0) == 0 and status.counters["node_monitors_registered"] == 2


@pytest.mark.slow
def test_a_frozen_node_monitor_loses_no_outcome_and_rejoins(processes, creds):
    """A node monitor frozen past the scheduler's node timeout is dropped (its running tasks fail,
    its reservations go elsewhere); after SIGCONT it registers again and takes work."""
    _, address, nodes = _small_cluster(processes, node_timeout=1.0, scheduler_timeout=5)
    outcomes = trio.run(_run_while, address, creds, partial(_pause, nodes[0], 3.0))
    assert len(outcomes) == 300 and all(o.ok for o in outcomes)  # the lost ones were retried elsewhere

    async def both_take_work():
        async with Client([address], **creds.of("steady")) as client:
            with trio.fail_after(30):
                while len((await client.status()).nodes) < 2:
                    await trio.sleep(0.1)
                job = await client.submit_job([partial(time.sleep, 0.01)] * 40)
                return await job.results()

    assert trio.run(both_take_work) == [None] * 40


def test_a_batch_ending_in_the_peers_goodbye_keeps_its_outcomes(creds):
    """Over loopback, a node monitor writes [OutcomeToScheduler, Error] in one go: the client gets the
    result (not a 'lost' failure), and the scheduler does not call the goodbye a violation."""

    async def main():
        async with trio.open_nursery() as nursery:
            logic = SchedulerLogic(seed=1, bind_idle=False)  # the fake asks for its task
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(**creds.of("scheduler"))), logic=logic)
            )
            async with Client([address], **creds.of("steady")) as client:
                with await trio.to_thread.run_sync(creds.peer, address, "node-monitor") as fake:  # (TLS blocks)
                    await trio.to_thread.run_sync(fake.handshake, "node-monitor", "fake")
                    fake.send(RegisterNodeMonitor("fake", 1, instance="x"))
                    assert isinstance(await trio.to_thread.run_sync(fake.receive_one), Registered)
                    job = await client.submit_job([partial(int, 7)])
                    enqueue = await trio.to_thread.run_sync(fake.receive_one)
                    assert isinstance(enqueue, EnqueueReservations)
                    fake.send(GetTask(enqueue.job_id))
                    launch = await trio.to_thread.run_sync(fake.receive_one)
                    assert isinstance(launch, TaskToNode)
                    fake.send(
                        OutcomeToScheduler(launch.job_id, launch.task, Outcome(True, b"\x80\x04K\x07.")),
                        Error("going away"),
                    )
                    with trio.fail_after(10):
                        assert await job.results() == [7]
            assert logic.stats["protocol_errors"] == 0
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_client_that_does_not_read_is_dropped_and_others_are_served(creds, caplog):
    """A client that submits jobs with 1 MB results and never reads: past its connection's unsent
    limit (16 MiB here) the scheduler drops it, says why, forgets its jobs, and serves others."""

    async def main():
        async with trio.open_nursery() as nursery:
            logic = SchedulerLogic(seed=1)
            scheduler = partial(
                serve_scheduler,
                SchedulerConfig(link=LinkConfig(**creds.of("scheduler"), max_frame=2 << 20)),
                logic=logic,
            )
            address = await nursery.start(scheduler)
            node = NodeMonitorConfig(
                link=LinkConfig(**creds.of("nm0")),
                schedulers=[address],
                slots=2,
                executor="thread",
                inline_limit=2 << 20,  # 1 MB results travel with their outcomes
            )
            await nursery.start(serve_node_monitor, node)
            with await trio.to_thread.run_sync(creds.peer, address) as sloth:  # (its TLS handshake blocks)
                sloth.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                await trio.to_thread.run_sync(sloth.handshake, "client", "sloth")
                sloth.send(SubmitJob(1, [pack_task(bytes, (1 << 20,))] * 60))
                with trio.fail_after(30):
                    while logic.clients or logic.stats["outcomes"] < 16:
                        await trio.sleep(0.05)
            async with Client([address], **creds.of("steady")) as client:
                job = await client.submit_job([partial(int, i) for i in range(10)])
                with trio.fail_after(10):
                    assert await job.results() == list(range(10))
            nursery.cancel_scope.cancel()
        assert logic.jobs == {}  # the sloth's job was dropped, not kept running for nobody

    with caplog.at_level(logging.WARNING, "sparrow_runtime"):
        trio.run(main)
    assert any("the peer does not read" in r.getMessage() and "sloth" in r.getMessage() for r in caplog.records)


def test_a_second_node_monitor_with_a_live_id_stops_with_a_clear_reason(creds):
    """Clones sharing an id used to replace each other forever (36 registrations in 23 s). Now the
    second is refused with a reason naming the id and --id; the first keeps working."""

    async def main():
        async with trio.open_nursery() as nursery:
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(**creds.of("scheduler"))))
            )

            def node(name: str) -> NodeMonitorConfig:
                return NodeMonitorConfig(
                    link=LinkConfig(**creds.of(name)), schedulers=[address], node_id="box", executor="thread"
                )

            await nursery.start(serve_node_monitor, node("nm0"))
            with pytest.raises(BaseException) as raised:
                await nursery.start(serve_node_monitor, node("nm1"))
            leaf = raised.value
            while isinstance(leaf, BaseExceptionGroup):
                (leaf,) = leaf.exceptions
            assert isinstance(leaf, RegistrationRefused)
            assert "'box' is already registered" in str(leaf) and "--id" in str(leaf)
            async with Client([address], **creds.of("steady")) as client:
                job = await client.submit_job([partial(int, 3)] * 4)
                with trio.fail_after(10):
                    assert await job.results() == [3] * 4
                assert [n.node_id for n in (await client.status()).nodes] == ["box"]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_the_outcome_of_a_task_is_never_duplicated_by_a_goodbye_race():
    """OutcomeToClient for a task is sent once even if its node monitor's goodbye comes right after
    its OutcomeToScheduler (the lost-node path must not fail it a second time)."""
    logic = SchedulerLogic(seed=1)
    logic.on_node_messages("nm", [RegisterNodeMonitor("nm", 1, instance="i")])
    logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    logic.on_node_messages("nm", [GetTask(1)])
    out = logic.on_node_messages("nm", [OutcomeToScheduler(1, 0, Outcome(True, b"v"))])
    out += logic.on_node_lost("nm")
    assert [m for _, m in out if type(m) is OutcomeToClient] == [OutcomeToClient(1, 0, Outcome(True, b"v"), last=True)]
