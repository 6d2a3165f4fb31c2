"""What the tests that start processes check about them: which are alive, which a process started
(read from /proc, zombies excluded), a bounded wait for them to be gone, a bounded stop, a child
that cannot outlive the test run that started it, and, in a worker, its node monitor."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def killed_with_parent() -> None:
    """`preexec_fn` of a service a test starts in its own session: the kernel sends it SIGKILL when the
    process that started it ends, so a test run killed from outside (a timeout, ^C twice) leaves no
    scheduler or node monitor running; their own children follow them (a node monitor's workers, a
    `sparrow local`'s services, which hold a pipe to their parent)."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def node_monitor_pid() -> int:
    """Called in a worker process: the pid of its node monitor, its parent, or its fork server's parent
    (worker_zygote.py) for a forked worker."""
    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") as cmdline:
        if b"worker_zygote" not in cmdline.read():
            return parent
    with open(f"/proc/{parent}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def survivors(pids, timeout: float) -> list[int]:
    """The processes of `pids` still alive after waiting up to `timeout` seconds for all to be gone."""
    deadline = time.monotonic() + timeout
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def stop(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM `process`, and SIGKILL it if it has not ended `timeout` seconds later; reaped either way."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
