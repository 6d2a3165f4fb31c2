"""--task-user: a node monitor's process executors run tasks as another OS user, who cannot read the
service's key (mode 0600, the service's user's). Needs root to create that user (task_user_host.py)."""

import json
import os
import shutil
import sys
import tempfile
from functools import partial

import pytest
import trio

from sparrow_runtime import Client

from .task_user_host import mount_python_view, node_with_task_user, os_users, run_in_namespace, tls

TASK_USER = "sparrow-task-test"


@pytest.fixture(scope="module")
def task_user():
    """A system user for tasks, made for this module (task_user_host.os_users), and how to run a node
    monitor whose workers can start as it."""
    with os_users(TASK_USER) as (entries, how):
        yield entries[0], how


def _read(path):
    with open(path) as f:
        return f.read()


def _whoami():
    return os.getuid(), os.getgid(), os.getgroups(), os.environ.get("HOME")


async def _run_on_node(certs_dir: str, tasks, task_user):
    async with (
        node_with_task_user(certs_dir, task_user) as address,
        Client([address], tls=tls(certs_dir, "alice")) as client,
    ):
        return await (await client.submit_job(tasks)).outcomes()


def _scenario(certs_dir: str, user: str) -> dict:
    """Tasks that read the node monitor's key (0600, root's), a 0644 file beside it, and their own ids,
    run under `user` and then without a task user; what they saw, as plain data."""
    folder = tempfile.mkdtemp(prefix="sparrow-task-user-")
    try:
        os.chmod(folder, 0o755)
        key = os.path.join(folder, "node-key.pem")
        public = os.path.join(folder, "ca.pem")
        shutil.copy(f"{certs_dir}/nm0-key.pem", key)
        shutil.copy(f"{certs_dir}/ca.pem", public)
        os.chmod(key, 0o600)
        os.chmod(public, 0o644)
        tasks = [partial(_read, key), partial(_read, public), _whoami]
        read_key, read_public, who = trio.run(_run_on_node, certs_dir, tasks, user)
        control, _, _ = trio.run(_run_on_node, certs_dir, tasks, None)
        return {
            "key": None if read_key.ok else type(read_key.exception).__name__,
            "public": read_public.value[:27] if read_public.ok else None,
            "who": [who.value[0], who.value[1], list(who.value[2]), who.value[3]],
            "control": control.value[:27] if control.ok else repr(control.exception),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _in_namespace(certs_dir: str, user: str) -> dict:
    """`_scenario` in a private mount namespace where the root-private directory is traversable."""
    return run_in_namespace(__name__, certs_dir, user)


def test_a_task_under_task_user_cannot_read_the_service_key(cluster_certs, task_user):
    """As the task user, a task runs with that user's ids and no other group; it reads a 0644 file but
    not the node monitor's key (0600, root's) beside it: PermissionError. Without --task-user it reads it."""
    entry, how = task_user
    run = _scenario if how == "direct" else _in_namespace
    seen = run(str(cluster_certs.directory), entry.pw_name)
    assert seen["key"] == "PermissionError"
    assert seen["public"] == "-----BEGIN CERTIFICATE-----"
    assert seen["who"] == [entry.pw_uid, entry.pw_gid, [], entry.pw_dir]
    assert seen["control"] == "-----BEGIN PRIVATE KEY-----"


def test_an_unknown_task_user_is_refused_at_once():
    """A task user this host does not have is a ValueError naming it, before any worker starts."""
    from sparrow_runtime.services.worker_pool import ProcessExecutor

    with pytest.raises(ValueError, match="task user 'no-such-user-here': no such user on this host"):
        ProcessExecutor(1, task_user="no-such-user-here")


if __name__ == "__main__":  # run by _in_namespace: python -m tests.runtime.services.test_task_user CERTS USER DIR
    mount_python_view(sys.argv[3])
    print(json.dumps(_scenario(sys.argv[1], sys.argv[2])))
