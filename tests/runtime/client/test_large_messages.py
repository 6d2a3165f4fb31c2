"""Big but legal messages with real processes on loopback: bursts of 30-60 MB tasks and results in
both directions never look like a peer that does not read, and never fail the small tasks beside
them. Every task ends with exactly one outcome (the client refuses a second one)."""

from __future__ import annotations

import os
import select
import subprocess
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig, TaskFailed
from sparrow_runtime.client.job import build_submit
from sparrow_runtime.services.local_cluster import SPARROW
from sparrow_runtime.services.processes import child_env
from sparrow_runtime.services.ready_line import parse_ready_line
from sparrow_runtime.wire.task_codec import pack_task

from ...process_tree import stop

MB = 1_000_000


def _size(data: bytes) -> int:
    return len(data)


def _bytes_at(when: float, size: int) -> bytes:
    """`size` bytes, returned at wall-clock time `when`: results that finish together."""
    time.sleep(max(when - time.time(), 0))
    return bytes(size)


@pytest.mark.slow
def test_bursts_of_big_tasks_and_results_beside_a_stream_of_small_tasks_all_succeed_once():
    """Six 30 MB jobs sent together (180 MB, over the old 128 MiB bound of the client's link), five
    40 MB results finishing together (200 MB on the node monitor's link) and one 60 MB task with a
    60 MB result, beside 60 small jobs: every task succeeds with its first attempt."""

    async def main():
        with LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=5, dashboard=False
        ) as cluster:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                small: list = []

                async def steady() -> None:
                    for i in range(60):
                        small.append(await client.submit_job([partial(int, i)]))
                        await trio.sleep(0.02)

                with trio.fail_after(120):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(steady)
                        msgs = [
                            build_submit([pack_task(_size, (bytes([i]) * (30 * MB),))], "", 0, None, None)
                            for i in range(6)
                        ]
                        inbound = [client.send_job(msg) for msg in msgs]  # together, with no wait between
                        del msgs
                        inbound_values = [await job.outcomes() for job in inbound]
                        when = time.time() + 3.0
                        outbound = await client.submit_job([partial(_bytes_at, when, 40 * MB)] * 5, probe_ratio=1.0)
                        outbound_values = await outbound.outcomes()
                        both = await client.submit_job([partial(bytes, b"\1" * (60 * MB))])
                        both_values = await both.outcomes()
                    small_values = [await job.outcomes() for job in small]
        assert [(o.ok, o.value, o.attempts) for (o,) in inbound_values] == [(True, 30 * MB, 1)] * 6
        assert [(o.ok, len(o.value), o.attempts) for o in outbound_values] == [(True, 40 * MB, 1)] * 5
        assert [(o.ok, len(o.value), o.attempts) for o in both_values] == [(True, 60 * MB, 1)]
        assert [(o.ok, o.value, o.attempts) for (o,) in small_values] == [(True, i, 1) for i in range(60)]

    trio.run(main)


MiB = 1 << 20
SECRET = "large-messages-secret"


def _service(args: list[str], secret_file: str) -> tuple[subprocess.Popen, str]:
    """Start `sparrow ARGS` on loopback; the process and the address of its ready line (30 s at most)."""
    common = [
        "--insecure",
        "--listen",
        "127.0.0.1:0",
        "--secret-file",
        secret_file,
        "--exit-with-parent",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(
        [*SPARROW, *args, *common], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env()
    )
    line = b""
    deadline = time.monotonic() + 30
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([process.stdout], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(process.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            process.kill()
            raise RuntimeError(f"sparrow {args[0]} printed no ready line: {line!r}")
        line += chunk
    return process, parse_ready_line(line.decode())[0]


def _stop(process: subprocess.Popen) -> None:
    stop(process)
    process.stdin.close()
    process.stdout.close()


@pytest.mark.slow
def test_three_max_frames_fail_only_what_is_over_a_hops_limit_once(tmp_path):
    """Node monitor 4 MiB, scheduler 8 MiB, clients 12 MiB and 2 MiB. Tasks just under and just over
    each limit: what is under succeeds, what is over fails once, with TaskFailed naming its size and
    the limit it is over; results of every size succeed (kept at the node monitor, fetched in chunks
    that fit each link); small tasks beside them succeed; no link closes (no failover, no node monitor
    lost, no protocol error)."""
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET)
    secret_file.chmod(0o600)
    scheduler, address = _service(["scheduler", "--id", "s", "--max-frame", str(8 * MiB)], str(secret_file))
    node_monitor = None
    try:
        node_monitor, _ = _service(
            ["node-monitor", "--id", "nm", "--slots", "2", "--max-frame", str(4 * MiB), "--scheduler", address],
            str(secret_file),
        )

        async def run(max_frame: int, tasks: list) -> tuple[list, list, dict, list]:
            async with Client([address], secret=SECRET, max_frame=max_frame) as client:
                with trio.fail_after(60):
                    jobs = [await client.submit_job([task]) for task in tasks]
                    small = await client.submit_job([partial(int, i) for i in range(20)])
                    outcomes = [(await job.outcomes())[0] for job in jobs]
                    small_outcomes = await small.outcomes()
                    counters = (await client.status()).counters
            return outcomes, small_outcomes, counters, client.failovers

        def payload(size: int):
            return partial(_size, b"x" * size)

        def result(size: int):
            return partial(bytes, size)

        under, over = -64 * 1024, 64 * 1024
        big_client = [
            payload(4 * MiB + under),
            payload(4 * MiB + over),
            payload(8 * MiB + under),
            payload(8 * MiB + over),
            result(4 * MiB + under),
            result(4 * MiB + over),
        ]
        small_client = [result(2 * MiB + under), result(2 * MiB + over)]
        outcomes, small_outcomes, _, failovers = trio.run(run, 12 * MiB, big_client)
        outcomes_b, small_outcomes_b, counters, failovers_b = trio.run(run, 2 * MiB, small_client)
    finally:
        for process in (node_monitor, scheduler):
            if process is not None:
                _stop(process)
    assert all(o.ok and o.attempts == 1 for o in small_outcomes + small_outcomes_b)
    assert failovers == [] and failovers_b == []
    assert counters.get("protocol_errors", 0) == 0 and counters.get("node_monitors_lost", 0) == 0
    assert [o.attempts for o in outcomes + outcomes_b] == [1] * 8
    ok = [o.index for o in outcomes + outcomes_b if o.ok]
    assert [o.ok for o in outcomes] == [True, False, False, False, True, True]
    assert [o.ok for o in outcomes_b] == [True, True]  # results stay at the node monitor: fetched in chunks
    assert outcomes[0].value == 4 * MiB + under and len(outcomes[4].value) == 4 * MiB + under and ok
    assert len(outcomes[5].value) == 4 * MiB + over
    assert len(outcomes_b[0].value) == 2 * MiB + under and len(outcomes_b[1].value) == 2 * MiB + over
    failed = [
        (o, size, limit)
        for o, size, limit in [
            (outcomes[1], 4 * MiB + over, 4 * MiB),
            (outcomes[2], 8 * MiB + under, 4 * MiB),
            (outcomes[3], 8 * MiB + over, 8 * MiB),
        ]
    ]
    for outcome, size, limit in failed:
        assert isinstance(outcome.exception, TaskFailed)
        text = str(outcome.exception)
        assert f"over the frame limit of {limit} bytes" in text, text
        assert any(str(n) in text for n in range(size, size + 200)), text  # the size (with its pickling)
