"""`sparrow submit`: run a shell command or a Python callable as one job, streaming each task's outcome.

    sparrow submit --tasks 100 -- CMD ARGS...   each task runs CMD with SPARROW_TASK_INDEX set
    sparrow submit --tasks 10 module:function   each task calls function(index)
    sparrow submit --py-modules ./mylib --working-dir . -- ./job.sh

`module.function`, which is no program here, is refused with a hint (module:function was meant).

`--py-modules` and `--working-dir` ship code with the job (client/code.py): the module of `module:function` is
imported from them (and from the current directory) and sent by reference, the workers importing it from the
shipped copy; a shell task runs in the shipped working directory. A module imported from the current directory
that is not shipped (not installed either) is sent by value, so the workers do not need the file. What a callable
prints is printed here as it arrives, each line after a `(task JOB.TASK on NODE)` prefix (--output keep: not
shown). Standard error says the job's id once it is accepted (`sparrow tasks --job ID` follows it) and a summary
at the end. Exit status: 0 if every task succeeded, 1 otherwise, 130 after Ctrl-C (which cancels the job: its
running tasks are stopped). With several --scheduler it fails over between them; --retries relaunches a task after
a system failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import cloudpickle
import trio

from ..client.core import Client, JobHandle, TaskOutcome
from ..errors import RemoteTraceback, SparrowError, TaskFailed
from ..services.logsetup import setup_logging
from .command_task import CommandFailed, run_command
from .common import CommandError, add_command, client_target, settings
from .config import Resolved

CALLABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
CANCEL_WAIT = 3.0  # seconds Ctrl-C waits for the cancellation to be confirmed
ANNOUNCE_POLL = 0.05  # seconds between two looks for the job's id until it is accepted
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")  # mymodule.work: module:function was likely meant


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        subparsers,
        "submit",
        run,
        help="run a shell command or a Python callable as one job",
        description="Run `-- CMD ARGS...` (each task gets its index in SPARROW_TASK_INDEX) or `module:function` "
        "(called with the task index) as one job of --tasks tasks, print each task's outcome as it arrives, and "
        "exit 1 if any task failed. Connects to the `sparrow local` of this host unless --scheduler is given.",
    )
    p.add_argument("target", nargs="+", metavar="TARGET", help="module:function, or -- CMD ARGS...")


def run(args: argparse.Namespace) -> int:
    s = settings("submit", args)
    setup_logging(s["log_level"])
    target = args.target
    if len(target) == 1 and CALLABLE.fullmatch(target[0]):
        fn = _import_callable(target[0], s["py_modules"], s["working_dir"])
        tasks = [partial(fn, i) for i in range(s["tasks"])]
        show: Callable[[int, Any], str] = _show_value
    else:
        _check_command(target[0])
        tasks = [partial(run_command, list(target), i) for i in range(s["tasks"])]
        show = _show_output
    schedulers, credentials = client_target(s)
    try:
        return trio.run(_submit, schedulers, credentials, tasks, s, show)
    except (SparrowError, OSError, ValueError, TypeError) as exc:
        raise CommandError(str(exc)) from None


def _check_command(name: str) -> None:
    """Refuse, with a hint, a command that looks like module.function and is no program here."""
    if DOTTED.fullmatch(name) and shutil.which(name) is None and not os.path.exists(name):
        module, _, function = name.rpartition(".")
        raise CommandError(
            f"{name!r} is no command on this host; to call a Python function write MODULE:FUNCTION "
            f"({module}:{function}); for a program only the workers have, give its path"
        )


def _import_callable(spec: str, py_modules: Sequence[str] = (), working_dir: str | None = None) -> Callable[..., Any]:
    """The callable `spec` names, imported as the workers will: from the shipped code (each of `py_modules` from
    its parent folder, the `working_dir`) or the current directory; its module registered to be pickled by value
    if it is in the current directory and not shipped."""
    module_name, _, attribute = spec.partition(":")
    shipped = [os.path.abspath(path) for path in [*py_modules, *([working_dir] if working_dir else [])]]
    search = [os.path.dirname(os.path.abspath(path)) for path in py_modules]
    if working_dir:
        search.append(os.path.abspath(working_dir))
    added = [*dict.fromkeys([*search, os.getcwd()])]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"cannot import {module_name!r}: {exc}") from None
    finally:
        del sys.path[: len(added)]
    fn: Any = module
    for part in attribute.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise CommandError(f"module {module_name!r} has no attribute {attribute!r}")
    if not callable(fn):
        raise CommandError(f"{spec} is not callable")
    where = getattr(module, "__file__", None)
    if where is None:
        return fn
    here = Path(where).resolve()
    if here.is_relative_to(Path.cwd().resolve()) and not any(here.is_relative_to(Path(p).resolve()) for p in shipped):
        cloudpickle.register_pickle_by_value(module)  # the workers may not have the file
    return fn


def _show_value(index: int, value: object) -> str:
    return f"[{index}] {value!r}"


def _show_output(index: int, output: str) -> str:
    lines = output.rstrip("\n").splitlines()
    return "\n".join(f"[{index}] {line}" for line in lines) if lines else f"[{index}] ok"


def _failure(outcome: TaskOutcome, traceback: bool) -> str:
    exc = outcome.exception
    assert exc is not None  # a failed outcome's
    text = str(exc) if isinstance(exc, (CommandFailed, TaskFailed)) else f"{type(exc).__name__}: {exc}"
    if traceback and isinstance(exc.__cause__, RemoteTraceback):
        text += "\n" + exc.__cause__.tb.rstrip()
    return f"[{outcome.index}] failed: {text}"


class _Announce:
    """Says the job's id once the scheduler accepted it, so `sparrow tasks --job ID` can follow it while it runs:
    from `watch` (a job whose tasks run long) or before its first outcome (its acceptance may come with it)."""

    def __init__(self, job: JobHandle, n_tasks: int) -> None:
        self._job = job
        self._n_tasks = n_tasks
        self._said = False

    def now(self) -> None:
        if not self._said and self._job.job_id is not None:
            self._said = True
            said = f"sparrow submit: job {self._job.job_id} accepted: {self._n_tasks} tasks"
            print(said, file=sys.stderr, flush=True)

    async def watch(self) -> None:
        while not self._said:
            self.now()
            await trio.sleep(ANNOUNCE_POLL)


async def _submit(
    schedulers: list[str], credentials: dict, tasks: list, s: Resolved, show: Callable[[int, Any], str]
) -> int:
    """Submit the job, print each outcome as it comes; on SIGINT/SIGTERM cancel the job (its running
    tasks are stopped) and exit 130 once the cancellation is confirmed (at most CANCEL_WAIT s)."""
    started = time.monotonic()
    failed = done = 0
    interrupted = False
    async with Client(
        schedulers,
        **credentials,
        retries=s["retries"],
        scheduler_timeout=s["scheduler_timeout"],
        py_modules=s["py_modules"] or None,
        working_dir=s["working_dir"],
        output=s["output"],
    ) as client:
        job = await client.submit_job(
            tasks,
            user=s["user"],
            priority=s["priority"],
            probe_ratio=s["probe_ratio"],
            timeout=s["task_timeout"],
            sampling=s["sampling"],
            resources=s["resources"],
        )
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:

                async def cancel_on_signal() -> None:
                    nonlocal interrupted
                    async for _ in signals:
                        interrupted = True
                        print(f"sparrow submit: cancelling job {job.job_id}", file=sys.stderr, flush=True)
                        job.cancel(force=True)
                        await trio.sleep(CANCEL_WAIT)
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(cancel_on_signal)
                announce = _Announce(job, len(tasks))
                nursery.start_soon(announce.watch)
                with trio.move_on_after(s["timeout"] if s["timeout"] is not None else float("inf")) as scope:
                    async for outcome in job.as_completed():
                        announce.now()
                        done += 1
                        if outcome.ok:
                            print(show(outcome.index, outcome.value), flush=True)
                        else:
                            failed += 1
                            print(_failure(outcome, s["traceback"]), flush=True)
                nursery.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    if interrupted:
        print(f"sparrow submit: job {job.job_id} cancelled: {done} of {len(tasks)} tasks had ended", file=sys.stderr)
        return 130
    if scope.cancelled_caught:
        print(
            f"sparrow submit: timed out after {s['timeout']:g} s with {done} of {len(tasks)} tasks done",
            file=sys.stderr,
        )
        return 1
    attempts = sum(job.attempts) - len(tasks)
    retried = f" ({attempts} relaunched after a failure)" if attempts > 0 else ""
    print(
        f"sparrow submit: job {job.job_id}: {len(tasks)} tasks, {len(tasks) - failed} succeeded, {failed} failed "
        f"in {elapsed:.2f} s{retried}",
        file=sys.stderr,
    )
    return 1 if failed else 0
