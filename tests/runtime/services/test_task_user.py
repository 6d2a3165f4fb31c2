"""--task-user: a node monitor's process executors run tasks as another OS user, who cannot read the
service's key (mode 0600, the service's user's). Needs root to create that user (useradd)."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, serve_node_monitor, serve_scheduler

TASK_USER = "sparrow-task-test"


def _skip_reason() -> str | None:
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root: it creates a user with useradd and switches executors to it"
    if shutil.which("useradd") is None:
        return "needs useradd to create the task user"
    return None


@pytest.fixture(scope="module")
def task_user():
    """A system user for tasks, created for this module (and removed after) unless it exists."""
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    try:
        pwd.getpwnam(TASK_USER)
        created = False
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TASK_USER],
            check=True,
            capture_output=True,
        )
        created = True
    entry = pwd.getpwnam(TASK_USER)
    try:
        try:
            ran = subprocess.run(
                [sys.executable, "-c", "import sparrow_runtime"],
                user=entry.pw_uid,
                group=entry.pw_gid,
                extra_groups=[],
                capture_output=True,
                cwd="/",
            )
            why = ran.stderr.decode().strip().splitlines()[-1:] if ran.returncode else None
        except PermissionError as exc:
            why = str(exc)
        if why is not None:
            pytest.skip(
                f"user {TASK_USER} cannot run {sys.executable} with sparrow_runtime (a directory on the way "
                f"is private to root, as /root is here; see docs/deploy.md for a check in a mount "
                f"namespace): {why}"
            )
        yield entry
    finally:
        if created:
            subprocess.run(["userdel", TASK_USER], check=False, capture_output=True)


def _read(path):
    with open(path) as f:
        return f.read()


def _whoami():
    return os.getuid(), os.getgid(), os.getgroups(), os.environ.get("HOME")


async def _run_on_node(certs, tasks, task_user):
    async with trio.open_nursery() as nursery:
        address = await nursery.start(partial(serve_scheduler, tls=certs.tls("sched")))
        node = partial(
            serve_node_monitor,
            [address],
            tls=certs.tls("nm0"),
            node_id="nm0",
            slots=1,
            executor="process",
            task_user=task_user,
        )
        await nursery.start(node)
        async with Client([address], tls=certs.tls("alice")) as client:
            outcomes = await (await client.submit_job(tasks)).outcomes()
        nursery.cancel_scope.cancel()
    return outcomes


def test_a_task_under_task_user_cannot_read_the_service_key(cluster_certs, task_user):
    """As the task user, a task runs with that user's ids and no other group; it reads a 0644 file but
    not the node monitor's key (0600, root's) beside it: PermissionError. Without --task-user it reads it."""
    folder = tempfile.mkdtemp(prefix="sparrow-task-user-")
    try:
        os.chmod(folder, 0o755)
        key = os.path.join(folder, "node-key.pem")
        public = os.path.join(folder, "ca.pem")
        shutil.copy(cluster_certs.directory / "nm0-key.pem", key)
        shutil.copy(cluster_certs.directory / "ca.pem", public)
        os.chmod(key, 0o600)
        os.chmod(public, 0o644)
        tasks = [partial(_read, key), partial(_read, public), _whoami]
        read_key, read_public, who = trio.run(_run_on_node, cluster_certs, tasks, task_user.pw_name)
        assert not read_key.ok and isinstance(read_key.exception, PermissionError)
        assert read_public.ok and read_public.value.startswith("-----BEGIN CERTIFICATE-----")
        assert who.value == (task_user.pw_uid, task_user.pw_gid, [], task_user.pw_dir)
        read_key, _, _ = trio.run(_run_on_node, cluster_certs, tasks, None)
        assert read_key.ok and read_key.value.startswith("-----BEGIN PRIVATE KEY-----")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_unknown_task_user_is_refused_at_once():
    """A task user this host does not have is a ValueError naming it, before any worker starts."""
    from sparrow_runtime.services.worker_pool import ProcessExecutor

    with pytest.raises(ValueError, match="task user 'no-such-user-here': no such user on this host"):
        ProcessExecutor(1, task_user="no-such-user-here")
