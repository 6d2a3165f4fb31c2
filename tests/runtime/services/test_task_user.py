"""--task-user: a node monitor's process executors run tasks as another OS user, who cannot read the
service's key (mode 0600, the service's user's). Needs root to create that user (useradd)."""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LinkConfig, SchedulerConfig, serve_node_monitor, serve_scheduler

TASK_USER = "sparrow-task-test"


def _skip_reason() -> str | None:
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root: it creates a user with useradd and switches executors to it"
    if shutil.which("useradd") is None:
        return "needs useradd to create the task user"
    return None


def _runs_python(entry) -> str | None:
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


def _private_dirs() -> list[tuple[str, list[str]]]:
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
    private = _private_dirs()
    return private[0] if len(private) == 1 else None


@pytest.fixture(scope="module")
def task_user():
    """A system user for tasks, created for this module (and removed after) unless it exists; and how
    to run a node monitor whose workers it can start: "direct", or "namespace" when a directory on the
    way to this Python is private to root (/root here): then the scenario runs in a private mount
    namespace where that directory is a traversable (0711) tmpfs holding only what Python needs, bound
    back from the real one (nothing changes outside that namespace)."""
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
        why = _runs_python(entry)
        if why is None:
            yield entry, "direct"
        elif _private_dir() is not None and shutil.which("unshare") is not None:
            yield entry, "namespace"
        else:
            private = ", ".join(folder for folder, _ in _private_dirs())
            pytest.skip(
                f"user {TASK_USER} cannot run {sys.executable} with sparrow_runtime: {why}"
                + (
                    f" (directories private to root on the way: {private}; the namespace view covers one)"
                    if private
                    else ""
                )
            )
    finally:
        if created:
            subprocess.run(["userdel", TASK_USER], check=False, capture_output=True)


def _read(path):
    with open(path) as f:
        return f.read()


def _whoami():
    return os.getuid(), os.getgid(), os.getgroups(), os.environ.get("HOME")


def _tls(folder: str, name: str):
    from sparrow_runtime.wire.tls import TLS

    return TLS(f"{folder}/ca.pem", f"{folder}/{name}.pem", f"{folder}/{name}-key.pem")


async def _run_on_node(certs_dir: str, tasks, task_user):
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            partial(serve_scheduler, SchedulerConfig(link=LinkConfig(tls=_tls(certs_dir, "sched"))))
        )
        node = partial(
            serve_node_monitor,
            [address],
            tls=_tls(certs_dir, "nm0"),
            node_id="nm0",
            slots=1,
            executor="process",
            task_user=task_user,
        )
        await nursery.start(node)
        async with Client([address], tls=_tls(certs_dir, "alice")) as client:
            outcomes = await (await client.submit_job(tasks)).outcomes()
        nursery.cancel_scope.cancel()
    return outcomes


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
    """`_scenario` in a private mount namespace where the root-private directory is traversable (see
    the task_user fixture): `python -m` this module, which mounts, runs it and prints its JSON."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with tempfile.TemporaryDirectory(prefix="sparrow-python-view-") as staging:  # its mount points
        ran = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                sys.executable,
                "-m",
                __name__,
                certs_dir,
                user,
                staging,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=root,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


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


def _mount_python_view(staging: str) -> None:
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


if __name__ == "__main__":  # run by _in_namespace: python -m tests.runtime.services.test_task_user CERTS USER DIR
    _mount_python_view(sys.argv[3])
    print(json.dumps(_scenario(sys.argv[1], sys.argv[2])))
