"""How worker processes start (worker_starts.py, worker_zygote.py): a forked worker is as fresh and as private as
a spawned one (a session of its own, non-dumpable, none of the fork server's descriptors, none of another user's
data), a worker that dies as its first task is handed to it leaves that task exactly one outcome, and a fork
server that dies takes its workers' tasks down once, saying so, while later tasks run on spawned workers."""

import ctypes
import os
import signal
import socket
import sys
import time

import pytest
import trio

from sparrow_runtime.services import worker_starts as worker_starts_module
from sparrow_runtime.services.task_users import task_users
from sparrow_runtime.services.worker_pool import ProcessExecutor, wait_for_outcome
from sparrow_runtime.services.worker_starts import ForkedProcess, ForkStarts, SpawnStarts, worker_starts
from sparrow_runtime.wire.messages import SYSTEM
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

from .test_worker_pool import _with_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's")

_kept: list = []  # what alice's task leaves in her worker


def _what_am_i() -> dict:
    """The worker's own view: its parent, session, whether it is dumpable, and the kinds of its sockets."""
    kinds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            with socket.socket(fileno=os.dup(int(name))) as sock:
                kinds.append(sock.type)
        except OSError:  # not a socket
            pass
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    return {"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "dumpable": dumpable, "sockets": kinds}


def _keep(secret: bytes) -> int:
    _kept.append(secret)
    return os.getpid()


async def _run(executor, user, fn, *args):
    launch = lambda payload, done: executor.launch(payload, done, None, user)  # noqa: E731
    return await wait_for_outcome(launch, pack_task(fn, args))


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether the readable memory of process `pid` holds `needle` (needs CAP_SYS_PTRACE: it is non-dumpable)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or line.rstrip().endswith("[vvar]"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:  # a mapping that cannot be read (a device's)
                continue
    return False


def test_the_policy_forks_where_it_can_switch_users_as_a_spawn_would():
    """Fork without a task user, or as root; spawn for a task user without root (a fork server started
    without root could not switch its children's users)."""
    assert isinstance(worker_starts(task_users(None)), ForkStarts)
    with_user = worker_starts(task_users("sparrow-{user}"))
    assert isinstance(with_user, ForkStarts if os.geteuid() == 0 else SpawnStarts)


def test_a_forked_worker_is_fresh_private_and_holds_none_of_the_fork_servers_lines():
    """Its parent is the fork server; it leads a session of its own (killed whole), is non-dumpable, and
    holds no SOCK_SEQPACKET socket (the server's line: a task could ask it for workers of any user)."""

    async def body(executor):
        assert isinstance(executor._starts, ForkStarts)
        seen = unpack_outcome(await _run(executor, "alice", _what_am_i))
        assert seen["ppid"] == executor._starts._server.pid
        assert seen["sid"] == seen["pid"]
        assert seen["dumpable"] == 0
        assert socket.SOCK_SEQPACKET not in seen["sockets"] and socket.SOCK_STREAM in seen["sockets"]

    trio.run(_with_executor, lambda: ProcessExecutor(1), body)


@pytest.mark.skipif(os.geteuid() != 0, reason="reads non-dumpable workers' memory: needs root (CAP_SYS_PTRACE)")
def test_a_worker_forked_for_bob_holds_none_of_alices_data():
    """Alice's task keeps a secret in her worker; bob's worker, forked afterwards from the same server, holds
    no copy of it (the server never sees a task), while alice's does (the control: the scan finds it)."""
    secret = os.urandom(16).hex().encode() + b"-alices-secret"

    async def body(executor):
        alices = unpack_outcome(await _run(executor, "alice", _keep, secret))
        bobs = unpack_outcome(await _run(executor, "bob", os.getpid))
        assert alices != bobs
        assert _memory_holds(alices, secret)
        assert not _memory_holds(bobs, secret)
        assert not _memory_holds(executor._starts._server.pid, secret)

    trio.run(_with_executor, lambda: ProcessExecutor(1), body)


class _PerUserAsMe:
    """Workers started per user (as task_users.TaskUserPerTenant does), all as this process's OS user."""

    per_user = True
    spec = None

    def options(self, user):
        return {}


@pytest.mark.parametrize("per_user", [False, True])
@pytest.mark.parametrize("starts", [SpawnStarts, ForkStarts])
def test_a_worker_that_dies_as_it_is_claimed_leaves_its_task_exactly_one_outcome(starts, per_user):
    """Bob's first task needs a new worker (a fresh one, or one started for him); that worker is killed the
    moment it starts. The task is reported once: run on the fresh worker that replaces it, or, started for
    him, failed saying why (a worker that cannot start is not started again and again), or, if the worker
    said it was ready before the kill landed, failed as a task whose worker died; alice's worker never
    runs it."""

    async def body(executor):
        alice = unpack_outcome(await _run(executor, "alice", os.getpid))
        real_start = executor._starts.start
        killed = []

        async def start_and_kill(*args, **kwargs):
            process = await real_start(*args, **kwargs)
            if not killed:
                os.kill(process.pid, signal.SIGKILL)
                killed.append(process.pid)
            return process

        executor._starts.start = start_and_kill
        outcomes = []
        done = trio.Event()

        def got(outcome):
            outcomes.append(outcome)
            done.set()

        executor.launch(pack_task(os.getpid), got, None, "bob")
        with trio.fail_after(30):
            await done.wait()
        await trio.sleep(0.3)  # a second outcome would come by now
        assert len(outcomes) == 1
        (outcome,) = outcomes
        if outcome.ok:  # run by the fresh worker that replaced the killed one
            assert not per_user and unpack_outcome(outcome) not in {alice, killed[0]}
        else:  # started for him ("died as it started"), or it said ready before the kill ("died while running")
            assert outcome.failure == SYSTEM and f"process {killed[0]}" in outcome.error
            assert per_user or "died while running the task (killed by SIGKILL)" in outcome.error
        assert unpack_outcome(await _run(executor, "alice", os.getpid)) == alice

    def make():
        executor = ProcessExecutor(1)
        executor._starts = starts()
        if per_user:
            executor._task_users = _PerUserAsMe()
        return executor

    trio.run(_with_executor, make, body)


def test_a_fork_server_that_dies_fails_its_workers_tasks_once_and_later_tasks_run_on_spawned_workers(caplog):
    """The server is killed while alice's task runs on a worker it forked: that task fails once, saying its
    worker was killed, and the node monitor warns once; bob's next task runs on a worker the node monitor
    spawned itself."""

    async def body(executor):
        starts = executor._starts
        outcomes = []
        executor.launch(pack_task(time.sleep, (30,)), outcomes.append, None, "alice")
        with trio.fail_after(10):
            while not any(w.ticket is not None and w.ready for w in executor._workers):
                await trio.sleep(0.01)
        os.kill(starts._server.pid, signal.SIGKILL)
        with trio.fail_after(10):
            while not outcomes:
                await trio.sleep(0.01)
        await trio.sleep(0.3)
        assert len(outcomes) == 1
        assert not outcomes[0].ok and outcomes[0].failure == SYSTEM and "SIGKILL" in outcomes[0].error
        seen = unpack_outcome(await _run(executor, "bob", _what_am_i))
        assert seen["ppid"] == os.getpid() and seen["dumpable"] == 0
        assert not any(isinstance(w.process, ForkedProcess) for w in executor._workers)

    trio.run(_with_executor, lambda: ProcessExecutor(1), body)
    assert [r.message for r in caplog.records if "fork server ended" in r.message] == [
        "the executor's fork server ended: its workers are killed, later workers are spawned"
    ]


def test_a_stuck_fork_server_is_ended_and_the_task_runs_on_a_spawned_worker(monkeypatch):
    """The server stops answering (SIGSTOP) while bob's first task needs a worker: past the request's
    deadline the server is killed, and the task runs, once, on a worker the node monitor spawned."""
    monkeypatch.setattr(worker_starts_module, "REQUEST_TIMEOUT", 0.5)

    async def body(executor):
        alice = unpack_outcome(await _run(executor, "alice", os.getpid))
        server = executor._starts._server
        os.kill(server.pid, signal.SIGSTOP)
        with trio.fail_after(20):
            seen = unpack_outcome(await _run(executor, "bob", _what_am_i))
        assert seen["pid"] != alice and seen["ppid"] == os.getpid()
        with trio.fail_after(10):
            assert await server.wait() == -signal.SIGKILL

    trio.run(_with_executor, lambda: ProcessExecutor(1), body)


_CLUSTER_SCRIPT = """
from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor

def double(x):
    return 2 * x

with LocalCluster(node_monitor=NodeMonitorConfig(executor="process")) as cluster, \\
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor:
    print(sum(executor.map(double, range(50))))
"""


def test_a_local_cluster_that_closes_says_nothing_of_its_fork_servers():
    """Closing a LocalCluster of process executors ends each node monitor's fork server as planned: no
    warning that the server ended, no traceback from it (its line is closed with reports unread), on any
    process's standard error."""
    import subprocess

    for _ in range(2):  # the two closes race differently from run to run
        done = subprocess.run(
            [sys.executable, "-c", _CLUSTER_SCRIPT], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(sum(2 * x for x in range(50)))]
        assert "Traceback" not in done.stderr and "fork server ended" not in done.stderr, done.stderr
