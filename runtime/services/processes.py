"""Helpers for the child processes the runtime starts (executor workers, local cluster services)."""

from __future__ import annotations

import os
import signal
import sys

from ..wire.auth import SECRET_ENV, SECRET_FILE_ENV

# Never handed to a child through its environment: a task could print it (and a service started by
# LocalCluster gets the secret as a file, so it is not in /proc/PID/environ either).
SECRET_VARIABLES = (SECRET_ENV, SECRET_FILE_ENV)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the cluster secret's variables, with PYTHONPATH set to
    its sys.path (as multiprocessing's spawn does), so a function importable here is importable in
    the child when a task names it."""
    env = {name: value for name, value in os.environ.items() if name not in SECRET_VARIABLES}
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
