"""A node monitor started as its own process (`sparrow node-monitor` on TLS, thread executor), for tests that
kill one of a LocalCluster's node monitors and start it again under its id: `start_node_monitor` returns the
process once its ready line came (it is registered with every scheduler; `spawn_node_monitor` and
`await_ready` are its two steps), `stop` kills it and closes its pipes."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time

from sparrow_runtime.services.processes import child_env


def start_node_monitor(
    schedulers: list[str], tls_files: tuple[str, str, str], node_id: str, timeout: float = 60.0
) -> tuple[subprocess.Popen, float]:
    """The process and the seconds from its start to its ready line."""
    start = time.monotonic()
    process = spawn_node_monitor(schedulers, tls_files, node_id)
    await_ready(process, node_id, timeout)
    return process, time.monotonic() - start


def spawn_node_monitor(schedulers: list[str], tls_files: tuple[str, str, str], node_id: str) -> subprocess.Popen:
    """The process, just started."""
    ca, cert, key = tls_files
    args = ["node-monitor", "--id", node_id, "--executor", "thread", "--slots", "1", "--listen", "127.0.0.1:0"]
    args += ["--log-level", "warning", "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "--exit-with-parent"]
    for address in schedulers:
        args += ["--scheduler", address]
    return subprocess.Popen(
        [sys.executable, "-m", "sparrow_runtime.cli.main", *args],
        stdin=subprocess.PIPE,  # held open while we live: --exit-with-parent
        stdout=subprocess.PIPE,
        env=child_env(),
        start_new_session=True,
    )


def await_ready(process: subprocess.Popen, node_id: str, timeout: float) -> None:
    """Return once `process` printed its ready line; AssertionError (and the process stopped) otherwise."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = os.read(process.stdout.fileno(), 4096) if ready else b""
    if b"listening on" not in line:
        stop(process)
        raise AssertionError(f"node monitor {node_id} printed {line!r} (exit status {process.returncode})")


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop(process: subprocess.Popen) -> None:
    kill(process.pid)
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()
