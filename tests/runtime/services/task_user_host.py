"""What the tests of task users need from this host: OS users made for a test (useradd, as root), and a way
to run a scenario whose workers switch to them even where this Python is under a directory private to root
(a pyenv in /root, mode 0700): a private mount namespace where that directory is a traversable (0711)
tmpfs holding only what Python needs, bound back from the real one (nothing changes outside it)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def skip_reason() -> str | None:
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root: it creates users with useradd and switches executors to them"
    if shutil.which("useradd") is None:
        return "needs useradd to create the task users"
    return None


def runs_python(entry: pwd.struct_passwd) -> str | None:
    """None if the user of `entry` can run this Python with sparrow_runtime, else why not."""
    try:
        ran = subprocess.run(
            [sys.executable, "-c", "import sparrow_runtime"],
            user=entry.pw_uid,
            group=entry.pw_gid,
            extra_groups=[],
            capture_output=True,
            cwd="/",
            timeout=60,
        )
    except PermissionError as exc:
        return str(exc)
    return "\n".join(ran.stderr.decode().strip().splitlines()[-1:]) if ran.returncode else None


def _needed_paths() -> list[str]:
    """What a worker needs to read: this Python, its packages, and sparrow_runtime's and sparrow_core's
    sources (an editable install maps them to the checkout, which is on no sys.path of the worker)."""
    import sparrow_core
    import sparrow_runtime

    packages = (os.path.dirname(sparrow_runtime.__file__), os.path.dirname(sparrow_core.__file__))
    return [os.path.realpath(p) for p in (sys.executable, sys.prefix, sys.base_prefix, *sys.path, *packages) if p]


def private_dirs() -> list[tuple[str, list[str]]]:
    """Each directory private to root (mode 0700, as /root is here) on the way to what a worker needs,
    with the entries of it that are needed."""
    needed = _needed_paths()
    found: dict[str, list[str]] = {}
    for path in needed:
        parts = path.split(os.sep)
        for i in range(2, len(parts)):
            folder = os.sep.join(parts[:i])
            if os.stat(folder).st_mode & 0o011 == 0:  # others (and group) may not enter it
                found[folder] = sorted({q.split(os.sep)[i] for q in needed if q.startswith(folder + os.sep)})
                break
    return sorted(found.items())


def _private_dir() -> tuple[str, list[str]] | None:
    """The one directory private to root on the way to what a worker needs (the namespace view covers
    one), with the entries of it that are needed; None if there is none."""
    private = private_dirs()
    return private[0] if len(private) == 1 else None


@contextlib.contextmanager
def os_users(*names: str) -> Iterator[tuple[list[pwd.struct_passwd], str]]:
    """System users `names` (made for the test, and removed after, unless they exist), and how to run a node
    monitor whose workers can start as them: "direct", or "namespace" (`run_in_namespace`). Skips the test,
    naming why, where this host cannot."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    created = []
    try:
        for name in names:
            try:
                pwd.getpwnam(name)
            except KeyError:
                subprocess.run(
                    ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                    check=True,
                    capture_output=True,
                )
                created.append(name)
        entries = [pwd.getpwnam(name) for name in names]
        why = runs_python(entries[0])
        if why is None:
            yield entries, "direct"
        elif _private_dir() is not None and shutil.which("unshare") is not None:
            yield entries, "namespace"
        else:
            private = ", ".join(folder for folder, _ in private_dirs())
            pytest.skip(
                f"user {names[0]} cannot run {sys.executable} with sparrow_runtime: {why}"
                + (
                    f" (directories private to root on the way: {private}; the namespace view covers one)"
                    if private
                    else ""
                )
            )
    finally:
        for name in created:
            subprocess.run(["userdel", name], check=False, capture_output=True)


def tls(folder: str, name: str):
    """The TLS credentials of `name` in the certificates folder `folder` (made by the test's ClusterCerts)."""
    from sparrow_runtime.wire.tls import TLS

    return TLS(f"{folder}/ca.pem", f"{folder}/{name}.pem", f"{folder}/{name}-key.pem")


@contextlib.asynccontextmanager
async def node_with_task_user(certs_dir: str, task_user: str | None, slots: int = 1) -> AsyncIterator[Any]:
    """A scheduler and one node monitor (process executors, `slots` slots, tasks as `task_user`) on TLS with
    the certificates in `certs_dir`; yields the scheduler's address, and stops both after."""
    import trio

    from sparrow_runtime import LinkConfig, NodeMonitorConfig, SchedulerConfig, serve_node_monitor, serve_scheduler

    async with trio.open_nursery() as nursery:
        address = await nursery.start(serve_scheduler, SchedulerConfig(link=LinkConfig(tls=tls(certs_dir, "sched"))))
        node = partial(
            serve_node_monitor,
            NodeMonitorConfig(
                link=LinkConfig(tls=tls(certs_dir, "nm0")),
                schedulers=[address],
                node_id="nm0",
                slots=slots,
                executor="process",
                task_user=task_user,
            ),
        )
        await nursery.start(node)
        yield address
        nursery.cancel_scope.cancel()


def run_in_namespace(module: str, *args: str) -> dict:
    """`python -m module ARGS... STAGING` in a private mount namespace where the root-private directory is
    traversable; the module calls `mount_python_view(STAGING)`, runs its scenario and prints it as JSON on
    its last line (returned)."""
    with tempfile.TemporaryDirectory(prefix="sparrow-python-view-") as staging:  # its mount points
        ran = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", sys.executable, "-m", module, *args, staging],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def mount_python_view(staging: str) -> None:
    """In a private mount namespace (as root): cover the root-private directory with a tmpfs of mode
    0711 and bind back, from the real one (through mount points made in `staging`), only the entries
    Python needs."""
    found = _private_dir()
    if found is None:
        return
    folder, children = found
    for child in children:
        os.mkdir(os.path.join(staging, child))
        subprocess.run(["mount", "--bind", os.path.join(folder, child), os.path.join(staging, child)], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0711", "tmpfs", folder], check=True)
    for child in children:
        os.mkdir(os.path.join(folder, child))
        subprocess.run(["mount", "--bind", os.path.join(staging, child), os.path.join(folder, child)], check=True)
