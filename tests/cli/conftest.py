"""Helpers for running `sparrow` as a user would: subprocesses, real services on loopback, bounded
waits, and a cleanup that kills whatever a test started, even when it fails."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ..process_tree import descendants, killed_with_parent, survivors

SPARROW = [sys.executable, "-m", "sparrow_runtime.cli.main"]
STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
LEFTOVER_GRACE = 3.0


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a command under test: no SPARROW_* from outside, a private state dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARROW_")}
    runtime_dir = tmp_path / "xdg"
    runtime_dir.mkdir(mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime_dir)
    env.update(extra)
    return env


def run_sparrow(*args: str, env: dict[str, str], timeout: float = 60, cwd: Path | None = None):
    return subprocess.run(
        [*SPARROW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


class Running:
    """A `sparrow` command running in the background, in its own session, killed if the test run dies."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.args = args
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed when the command is stopped)
        self.process = subprocess.Popen(
            [*SPARROW, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
            preexec_fn=killed_with_parent,
        )
        self.output = ""
        self.tree: set[int] = set()
        self.leftover: list[int] = []

    def close(self) -> None:
        self._stderr.close()

    def wait_for(self, pattern: str, timeout: float = STARTUP_TIMEOUT) -> re.Match:
        """Read stdout until `pattern` matches it; fail with what was printed if it does not in time."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.MULTILINE)
        while not (found := regex.search(self.output)):
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(remaining, 0))
            chunk = os.read(self.process.stdout.fileno(), 65536) if ready else b""
            if not chunk:
                self.stop(signal.SIGKILL)
                pytest.fail(
                    f"`sparrow {' '.join(self.args)}` did not print {pattern!r}:\n{self.output}\n{self.stderr()}"
                )
            self.output += chunk.decode()
        self.tree = descendants(self.process.pid)
        return found

    def wait_for_stderr(self, text: str, timeout: float = STARTUP_TIMEOUT) -> None:
        """Wait until `text` appears in what it logged; fail with its stderr if it does not in time."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop(signal.SIGKILL)
                pytest.fail(f"`sparrow {' '.join(self.args)}` did not log {text!r}:\n{self.stderr()}")
            time.sleep(0.05)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int | None:
        """Send `sig` and wait for the exit; then note in `leftover` the processes it had started that
        are still alive (after a grace of LEFTOVER_GRACE seconds), and kill them. Returns the exit
        status (None if it did not exit in time and had to be killed)."""
        tree = self.tree | descendants(self.process.pid)
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        left = self.leftover = survivors(tree, LEFTOVER_GRACE)
        for pid in [self.process.pid, *left]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
        if not self.process.stdout.closed:
            self.output += self.process.stdout.read().decode()
            self.process.stdout.close()
        return code


@pytest.fixture
def running():
    """Start background `sparrow` commands with `running(args, env)`; all are stopped after the test."""
    started: list[Running] = []

    def start(args: list[str], env: dict[str, str]) -> Running:
        started.append(Running(args, env))
        return started[-1]

    yield start
    for r in started:
        r.stop(signal.SIGKILL, timeout=5)
        r.close()
