"""Shipped code under --task-user 'sparrow-{user}': each cluster user's code is unpacked in a folder of their own,
mode 0700 and owned by their task user, which their tasks read and another user's tasks cannot even list; the
cache's root lets task users through but not list it. Needs root to create the users (task_user_host.py)."""

import importlib
import json
import os
import sys
import tempfile
from functools import partial

import trio

from sparrow_runtime import Client

from .task_user_host import mount_python_view, node_with_task_user, os_users, run_in_namespace, tls

LOOK = """\
import os, stat

def look(other):
    entry = os.path.dirname(os.path.dirname(__file__))  # ROOT/USERDIR/DIGEST (py/looklib.py in it)
    folder = os.path.dirname(entry)
    root = os.path.dirname(folder)
    seen = {"uid": os.getuid(), "folder": os.path.basename(folder)}
    st = os.stat(folder)
    seen["owner"], seen["mode"] = st.st_uid, stat.S_IMODE(st.st_mode)
    for name, path in (("root", root), ("other", os.path.join(root, other))):
        try:
            os.listdir(path)
            seen[name] = "listed"
        except OSError as exc:
            seen[name] = type(exc).__name__
    return seen
"""


async def _look(certs_dir: str, module) -> dict:
    async with node_with_task_user(certs_dir, "sparrow-{user}") as address:
        seen = {}
        for user, other in (("alice", "user-bob"), ("bob", "user-alice"), ("alice", "user-bob")):  # bob's made 2nd
            async with Client([address], tls=tls(certs_dir, user), py_modules=[module]) as client:
                job = await client.submit_job([partial(module.look, other)])
                (seen[user],) = await job.results()
        return seen


def _scenario(certs_dir: str) -> dict:
    folder = tempfile.mkdtemp(prefix="sparrow-code-users-")
    with open(os.path.join(folder, "looklib.py"), "w") as f:
        f.write(LOOK)
    sys.path.insert(0, folder)
    try:
        module = importlib.import_module("looklib")
        return trio.run(_look, certs_dir, module)
    finally:
        sys.path.remove(folder)
        sys.modules.pop("looklib", None)


def test_each_users_code_is_in_a_folder_of_their_task_user_that_the_other_cannot_list(cluster_certs):
    """alice's and bob's tasks run as sparrow-alice and sparrow-bob; each one's code folder is 0700 and owned by
    its task user; neither can list the cache's root nor the other's folder."""
    with os_users("sparrow-alice", "sparrow-bob") as (entries, how):
        certs_dir = str(cluster_certs.directory)
        seen = _scenario(certs_dir) if how == "direct" else run_in_namespace(__name__, certs_dir)
    for user, entry in zip(("alice", "bob"), entries, strict=True):
        assert seen[user]["uid"] == entry.pw_uid
        assert seen[user]["folder"] == f"user-{user}"
        assert (seen[user]["owner"], seen[user]["mode"]) == (entry.pw_uid, 0o700)
        assert seen[user]["root"] == "PermissionError" and seen[user]["other"] == "PermissionError"


if __name__ == "__main__":  # run by run_in_namespace: python -m tests.runtime.services.test_code_task_users CERTS DIR
    mount_python_view(sys.argv[2])
    print(json.dumps(_scenario(sys.argv[1])))
