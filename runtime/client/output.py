"""What a client does with the output of its tasks (OutputToClient: what each printed, captured by its worker).

A policy, chosen by `Client(output=...)` and `SparrowExecutor(output=...)`:
- "print" (the default): each line is written to this process's stdout or stderr (the stream the task wrote it
  to), after a short prefix naming the task and the node monitor it ran on, as it arrives (just before the
  task's outcome, each attempt's);
- "keep": nothing is printed;
- a callable, called as `fn(job_id, task, output)` (an Output) in the client's trio thread for each.
Whichever it is, the output of a task's last attempt that printed stays with its job: `SparrowFuture.output()`,
`JobHandle.output(task)`. It comes from the scheduler in an OutputToClient just before the task's outcome.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from ..wire.messages import Output
from .job import Job

logger = logging.getLogger(__name__)

OUTPUT_MODES = ("print", "keep")
STREAMS = ("stdout", "stderr")

OutputCallback = Callable[[Any, int, Output], None]  # (job id or None, task index, its Output)


def output_policy(output: str | OutputCallback) -> OutputCallback | None:
    """The callable that takes each task's output under `output` (None: "keep"). Raises ValueError for
    anything else."""
    if output == "print":
        return print_output
    if output == "keep":
        return None
    if callable(output):
        return _contained(output)
    raise ValueError(f"output must be one of {', '.join(OUTPUT_MODES)} or a callable, got {output!r}")


def prefix(job_id: int | None, task: int, node: str) -> str:
    """The prefix of each printed line of a task's output: `(task JOB.TASK on NODE) `."""
    where = f" on {node}" if node else ""
    return f"(task {'?' if job_id is None else job_id}.{task}{where}) "


def print_output(job_id: int | None, task: int, output: Output) -> None:
    """Write `output`'s lines to this process's stdout and stderr, each after the task's prefix."""
    head = prefix(job_id, task, output.node)
    for data, stream in ((output.stdout, sys.stdout), (output.stderr, sys.stderr)):
        if not data or stream is None:
            continue
        lines = data.decode(errors="replace").splitlines()
        try:
            stream.write("".join(f"{head}{line}\n" for line in lines))
            stream.flush()
        except (OSError, ValueError):  # closed: the output stays with the outcome
            pass


def text(job: Job, task: int, stream: str | None = None) -> str:
    """What task `task` of `job` wrote to `stream` ("stdout" or "stderr"; None: its stdout, then its stderr) in its
    last attempt that printed, decoded as UTF-8 (a byte that is not becomes U+FFFD); "" if it printed nothing (or
    has not ended yet)."""
    if stream is not None and stream not in STREAMS:
        raise ValueError(f"stream must be 'stdout', 'stderr' or None, got {stream!r}")
    output = None if job.outputs is None else job.outputs.get(task)
    if output is None:
        return ""
    data = {"stdout": output.stdout, "stderr": output.stderr}.get(stream or "", output.stdout + output.stderr)
    return data.decode(errors="replace")


def _contained(fn: OutputCallback) -> OutputCallback:
    """`fn`, whose exceptions are logged, never raised into the client."""

    def call(job_id: int | None, task: int, output: Output) -> None:
        try:
            fn(job_id, task, output)
        except Exception:
            logger.exception("the output callback %r raised", fn)

    return call
