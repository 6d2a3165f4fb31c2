"""A task that prints nothing costs its worker no system call for output capture: a real worker process
(worker_main) under `strace -c` runs quiet tasks one at a time with capture on and off, and makes as many
system calls per task either way (a poll, a recv, a send)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import pytest

from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.messages import OutcomeToNode, TaskToWorker
from sparrow_runtime.wire.task_codec import pack_task

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="no strace on this machine")

MAX_FRAME = 64 << 20


def _system_calls(tmp_path, cap: int, tasks: int) -> int:
    """The system calls of a worker (all its threads) that ran `tasks` quiet tasks, one at a time."""
    ours, theirs = socket.socketpair()
    counts = tmp_path / f"strace-{cap}-{tasks}.txt"
    worker = [sys.executable, "-m", "sparrow_runtime.services.worker_main", str(theirs.fileno()), str(MAX_FRAME)]
    process = subprocess.Popen(
        ["strace", "-f", "-c", "-o", str(counts), *worker, str(cap)], pass_fds=(theirs.fileno(),)
    )
    theirs.close()
    decoder = FrameDecoder(MAX_FRAME)
    ours.settimeout(60)
    assert decoder.feed(ours.recv(1 << 16))  # WorkerReady
    payload = pack_task(int, (5,))
    for _ in range(tasks):  # as a node monitor drives it: the next task once the outcome is in
        ours.sendall(encode_frames([TaskToWorker(payload)]))
        msgs: list = []
        while not msgs:
            msgs = decoder.feed(ours.recv(1 << 16))
        assert [type(m) for m in msgs] == [OutcomeToNode]
    ours.close()
    process.wait(timeout=60)  # 0, or killed by its own lifeline thread (worker_main) as the line closed
    (total,) = [line.split() for line in counts.read_text().splitlines() if line.rstrip().endswith(" total")]
    return int(total[3])  # % time, seconds, usecs/call, calls, errors, "total"


def test_a_quiet_task_costs_no_system_call_for_capture(tmp_path):
    per_task = {}
    for cap in (0, 65536):
        per_task[cap] = (_system_calls(tmp_path, cap, 600) - _system_calls(tmp_path, cap, 100)) / 500
    assert 2.5 <= per_task[0] <= 3.5, per_task  # a poll, a recv, a send (give or take a wake-up)
    assert per_task[65536] < per_task[0] + 0.25, per_task  # one more call per task would be +1
