"""Helpers for the child processes the runtime starts (executor workers, local cluster services)."""

from __future__ import annotations

import os
import signal
import sys


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with PYTHONPATH set to its sys.path (as multiprocessing's spawn
    does), so a function importable here is importable in the child when a task names it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if extra:
        env.update(extra)
    return env


def describe_exit(returncode: int | None) -> str:
    """'exit status 3', 'killed by SIGKILL', or 'still running'."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"
