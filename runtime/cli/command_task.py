"""A shell command as a Sparrow task (`sparrow submit -- CMD ARGS...`).

`run_command(argv, index)` runs in an executor worker: it starts `argv` with SPARROW_TASK_INDEX set
to `index` and returns its standard output; a command that exits non-zero raises CommandFailed
(its exit status and standard error travel back to the submitter). Workers import this module by
name, so it must stay importable without side effects.
"""

from __future__ import annotations

import os
import subprocess

TASK_INDEX_ENV = "SPARROW_TASK_INDEX"


class CommandFailed(Exception):
    """The command exited with a non-zero status (or was killed by a signal)."""

    def __init__(self, returncode: int, stderr: str) -> None:
        super().__init__(returncode, stderr)
        self.returncode = returncode
        self.stderr = stderr

    def __str__(self) -> str:
        how = f"exit status {self.returncode}" if self.returncode >= 0 else f"killed by signal {-self.returncode}"
        last = self.stderr.strip().splitlines()[-1:] or [""]
        return how + (f": {last[0]}" if last[0] else "")


def run_command(argv: list[str], index: int) -> str:
    """Run `argv` as task `index`; return its standard output, or raise CommandFailed."""
    env = dict(os.environ, **{TASK_INDEX_ENV: str(index)})
    done = subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", check=False
    )
    if done.returncode != 0:
        raise CommandFailed(done.returncode, done.stderr)
    return done.stdout
