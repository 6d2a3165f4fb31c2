"""`sparrow submit` under faults and Ctrl-C, and a client process that is itself paused, as a user
meets them: real processes on loopback."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

from ..process_tree import descendants, survivors
from .conftest import clean_env
from .test_services import submit, write_secret

ADDRESS = r"listening on (\S+?)[,\n]"


def _cluster(running, tmp_path, schedulers: int):
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    addresses, procs = [], []
    for _ in range(schedulers):
        proc = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret)], env)
        addresses.append(proc.wait_for(ADDRESS).group(1))
        procs.append(proc)
    args = ["node-monitor", "--insecure", "--slots", "2", "--secret-file", str(secret)]
    for address in addresses:
        args += ["--scheduler", address]
    node = running(args, env)
    node.wait_for(ADDRESS)
    return env, secret, addresses, procs, node


def test_submit_fails_over_when_its_scheduler_is_killed(running, tmp_path):
    """Two --scheduler: whichever the command holds is SIGKILLed mid-job; every task still succeeds."""
    env, secret, addresses, procs, _ = _cluster(running, tmp_path, 2)
    schedulers = [arg for address in addresses for arg in ("--scheduler", address)]
    job = submit(
        *schedulers,
        "--secret-file",
        str(secret),
        "--tasks",
        "40",
        "--scheduler-timeout",
        "0.5",
        "--",
        "sh",
        "-c",
        "sleep 0.2; echo done",
        env=env,
    )
    time.sleep(1.5)  # some tasks ran; the command is connected to one of the two
    for proc in procs:
        os.kill(proc.process.pid, signal.SIGKILL)
        if job.poll() is None:
            time.sleep(0.5)
            break
    out, err = job.communicate(timeout=60)
    assert job.returncode == 0, err
    assert out.count(" done\n") == 40 and "40 succeeded, 0 failed" in err


def test_ctrl_c_on_submit_cancels_its_job_and_stops_its_running_tasks(running, tmp_path):
    env, secret, addresses, _, node = _cluster(running, tmp_path, 1)
    job = submit(
        "--scheduler", addresses[0], "--secret-file", str(secret), "--tasks", "2", "--", "sleep", "60", env=env
    )
    sleepers = _started_sleepers(node)
    # its id is said while its tasks run, before any outcome (sparrow tasks --job ID follows it)
    assert select.select([job.stderr], [], [], 10)[0], "no line on standard error while the tasks ran"
    accepted = re.fullmatch(r"sparrow submit: job (\d+) accepted: 2 tasks\n", job.stderr.readline())
    assert accepted
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=30)
    assert job.returncode == 130 and f"cancelling job {accepted.group(1)}" in err and "cancelled" in err, err
    assert survivors(sleepers, timeout=10) == []  # forced: their workers were killed


def _started_sleepers(node) -> list[int]:
    """The `sleep 60` tasks running under the node monitor `node`, once they run (at most 30 s)."""
    deadline = time.monotonic() + 30
    while not _sleepers(node.process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    sleepers = _sleepers(node.process.pid)
    assert sleepers, "the tasks did not start"
    return sleepers


def _sleepers(root: int) -> list[int]:
    """`sleep 60` processes below `root`."""
    found = []
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", b"60"]:
                    found.append(pid)
        except OSError:
            pass
    return found


CLIENT = textwrap.dedent(
    """
    import sys, time, trio
    from functools import partial
    from sparrow_runtime import Client

    async def main():
        async with Client([sys.argv[1]], secret_file=sys.argv[2], scheduler_timeout=0.5) as client:
            job = await client.submit_job([partial(time.sleep, 5)] * 2)  # no outcome during the pause
            print("submitted", flush=True)
            await job.results()
            print("failovers", len(client.failovers), flush=True)

    trio.run(main)
    """
)


def test_a_paused_client_does_not_fail_over(running, tmp_path):
    """The client process itself is stopped for 3 s (6 of its heartbeat timeouts): when it resumes
    it does not take its scheduler for dead, and its job completes without a failover."""
    env, secret, addresses, _, _ = _cluster(running, tmp_path, 1)
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, addresses[0], str(secret)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdout.readline() == "submitted\n"
        client.send_signal(signal.SIGSTOP)
        time.sleep(3)
        client.send_signal(signal.SIGCONT)
        out, err = client.communicate(timeout=60)
    finally:
        client.kill()
    assert out == "failovers 0\n", err


def test_one_ctrl_c_while_submit_reconnects_to_a_frozen_scheduler_ends_it_within_a_second(running, tmp_path):
    """The only scheduler is SIGSTOPped: the command loses it and hangs in the handshake of its
    reconnect (5 s); one SIGINT then ends it, its task cancelled, within a second."""
    env, secret, addresses, procs, node = _cluster(running, tmp_path, 1)
    job = submit(
        "--scheduler",
        addresses[0],
        "--secret-file",
        str(secret),
        "--scheduler-timeout",
        "0.3",
        "--",
        "sleep",
        "60",
        env=env,
    )
    _started_sleepers(node)
    scheduler = procs[0].process.pid
    os.kill(scheduler, signal.SIGSTOP)
    try:
        time.sleep(1.5)  # lost after 0.3 s, then reconnecting until the handshake's 5 s
        assert job.poll() is None
        job.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = job.communicate(timeout=30)
        elapsed = time.monotonic() - started
    finally:
        os.kill(scheduler, signal.SIGCONT)
    assert job.returncode == 130 and "cancelled" in err, err
    assert elapsed < 1.0, f"took {elapsed:.2f} s after Ctrl-C"
