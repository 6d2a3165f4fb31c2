"""A tenant's task cannot read the memory of a worker that runs another tenant's tasks (/proc/PID/mem).

Real processes on TLS, a node monitor run as root whose workers run as task users (task_users.py): one OS
user for every tenant (workers are non-dumpable, worker_main.py, so one of the same OS user cannot read
them), or one OS user per tenant (`sparrow-{user}`: other OS users cannot either). Alice's task leaves its
worker idle, keeping her data; bob's task then tries to read that worker's memory, and, as a control, that of
a program it starts (dumpable again after exec, of bob's OS user): that read must work, so the refusal is the
kernel's for alice's worker. Needs root to make the users (task_user_host.py).
"""

import os
import sys
from functools import partial

import pytest
import trio

from sparrow_runtime import Client

from .task_user_host import mount_python_view, node_with_task_user, os_users, run_in_namespace, tls

SHARED = "sparrow-tm-shared"
PER_TENANT = "sparrow-tm-{user}"


def _pid() -> int:
    return os.getpid()


def _peek(pid: int) -> str:
    """Read 16 bytes of the first mapping of process `pid`: "read", or why not."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            start = int(maps.readline().split("-")[0], 16)
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(start)
            mem.read(16)
    except OSError as exc:
        return type(exc).__name__
    return "read"


def _peek_a_program_of_mine() -> str:
    import subprocess

    child = subprocess.Popen(["sleep", "30"])  # returns once it has exec'd
    try:
        return _peek(child.pid)
    finally:
        child.kill()
        child.wait()


async def _peeks(certs_dir: str, task_user: str) -> list:
    async with node_with_task_user(certs_dir, task_user, slots=2) as address:
        alice, bob = Client([address], tls=tls(certs_dir, "alice")), Client([address], tls=tls(certs_dir, "bob"))
        async with alice, bob:
            (alices,) = await (await alice.submit_job([_pid])).results()
            return await (await bob.submit_job([partial(_peek, alices), _peek_a_program_of_mine])).results()


def _scenario(certs_dir: str, task_user: str) -> dict:
    return {"peeks": trio.run(_peeks, certs_dir, task_user)}


@pytest.fixture(scope="module")
def task_users():
    with os_users(SHARED, PER_TENANT.format(user="alice"), PER_TENANT.format(user="bob")) as (_, how):
        yield how


@pytest.mark.parametrize("task_user", [SHARED, PER_TENANT])
def test_bobs_task_cannot_read_the_memory_of_alices_worker(cluster_certs, task_users, task_user):
    """Bob reads the memory of a program he started, but reading alice's idle worker is refused."""
    certs_dir = str(cluster_certs.directory)
    run = _scenario if task_users == "direct" else partial(run_in_namespace, __name__)
    seen = run(certs_dir, task_user)
    assert seen["peeks"] == ["PermissionError", "read"]


if __name__ == "__main__":  # run_in_namespace: python -m tests.runtime.services.test_tenant_memory CERTS USER DIR
    import json

    mount_python_view(sys.argv[3])
    print(json.dumps(_scenario(sys.argv[1], sys.argv[2])))
