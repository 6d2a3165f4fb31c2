"""The tests' own process helpers: a service a test starts does not outlive a test run killed from
outside (the orphaned scheduler and node monitors found running an hour after a killed run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .process_tree import alive, survivors

ROOT = Path(__file__).resolve().parent.parent

# A stand-in for pytest: starts a long child the way tests/cli/conftest.py's Running does (its own
# session, stdin from /dev/null), prints the child's pid, then waits to be killed.
PARENT = """
import subprocess, sys, time
from tests.process_tree import killed_with_parent
kwargs = {"preexec_fn": killed_with_parent} if sys.argv[1] == "guarded" else {}
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL,
                         start_new_session=True, **kwargs)
print(child.pid, flush=True)
time.sleep(120)
"""


def start_parent(mode: str) -> tuple[subprocess.Popen, int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], cwd=ROOT, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    line = parent.stdout.readline()
    assert line.strip().isdigit(), f"the parent printed {line!r}"
    return parent, int(line)


@pytest.mark.parametrize("mode", ["guarded", "unguarded"])
def test_a_child_started_with_killed_with_parent_ends_when_its_parent_is_sigkilled(mode: str) -> None:
    """SIGKILL of the parent ends a child started with `killed_with_parent` within seconds; without it
    (the control) the same child, in its own session, runs on orphaned."""
    parent, child = start_parent(mode)
    try:
        assert alive(child)
        parent.kill()
        parent.wait(10)
        left = survivors([child], timeout=5.0)
        assert left == ([] if mode == "guarded" else [child])
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        if alive(child):
            os.kill(child, signal.SIGKILL)
