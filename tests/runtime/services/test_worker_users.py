"""A process executor's workers serve one user each (worker_pool.py, idle_workers.py): a worker that ran a
task of one user never runs another's, tasks handed ahead included; past its spare workers the one idle
longest is retired, and no task is lost on the way."""

import os
import sys
import time

import pytest
import trio

from sparrow_runtime.services.worker_pool import ProcessExecutor, ThreadExecutor, wait_for_outcome
from sparrow_runtime.wire.messages import SYSTEM
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

from .test_worker_pool import _with_executor


async def _pid_of(executor, user):
    launch = lambda payload, done: executor.launch(payload, done, None, user)  # noqa: E731
    return unpack_outcome(await wait_for_outcome(launch, pack_task(os.getpid)))


def _with(executor, body):
    return _with_executor(lambda: executor, body)


def test_a_worker_never_runs_a_task_of_another_user():
    """One slot, alice then bob then each again: bob's tasks run in a worker started for him, each user's
    tasks keep to their own worker, and nothing counts as a restart."""

    async def body(executor):
        alice = await _pid_of(executor, "alice")
        bob = await _pid_of(executor, "bob")
        assert bob != alice
        for _ in range(3):
            assert await _pid_of(executor, "alice") == alice
            assert await _pid_of(executor, "bob") == bob
        assert executor.restarts == 0

    trio.run(_with, ProcessExecutor(1), body)


def test_past_the_spare_workers_the_one_idle_longest_is_retired():
    """At most max_workers alive: a third user's task retires the worker idle longest (alice's); bob keeps
    his; alice's next task gets a new worker, never bob's or carol's."""

    async def body(executor):
        executor.max_workers = 2
        alice = await _pid_of(executor, "alice")
        bob = await _pid_of(executor, "bob")
        carol = await _pid_of(executor, "carol")
        assert len({alice, bob, carol}) == 3
        assert alice not in {w.process.pid for w in executor._workers if not w.retired}  # retired
        assert await _pid_of(executor, "bob") == bob
        again = await _pid_of(executor, "alice")  # carol's (idle longest now) makes room
        assert again not in {alice, bob, carol}
        assert {w.process.pid for w in executor._workers if not w.retired} == {bob, again}
        assert executor.restarts == 0

    trio.run(_with, ProcessExecutor(1), body)


def test_a_task_is_handed_ahead_only_to_a_worker_of_its_user():
    async def body(executor):
        got = []
        executor.launch(pack_task(time.sleep, (0.5,)), got.append, None, "alice")
        assert executor.hand_ahead(pack_task(abs, (-1,)), "bob's", "bob") is None
        ahead = executor.hand_ahead(pack_task(abs, (-2,)), "alice's", "alice")
        assert ahead is not None and ahead.worker is not None and ahead.worker.user == "alice"
        executor.withdraw(ahead)

    trio.run(_with, ProcessExecutor(1), body)


def test_tasks_of_users_interleaved_on_two_slots_each_stay_in_their_users_workers():
    """Many tasks of three users at once on two slots: every task ends once, and no worker ran two users'."""

    async def body(executor):
        seen: dict[int, set] = {}
        async with trio.open_nursery() as nursery:
            for i in range(30):
                user = ("alice", "bob", "carol")[i % 3]

                async def one(user=user):
                    seen.setdefault(await _pid_of(executor, user), set()).add(user)

                nursery.start_soon(one)
        assert sum(len(users) for users in seen.values()) == len(seen)  # one user per worker
        assert {u for users in seen.values() for u in users} == {"alice", "bob", "carol"}

    trio.run(_with, ProcessExecutor(2), body)


def test_thread_executor_takes_every_users_tasks():
    """Threads of one process cannot be kept apart: they run any user's task (no worker waits to start)."""

    async def body(executor):
        assert await _pid_of(executor, "alice") == await _pid_of(executor, "bob") == os.getpid()

    trio.run(_with, ThreadExecutor(1), body)


def _dumpable() -> int:
    import ctypes

    return ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_workers_are_not_dumpable():
    """A worker's memory cannot be read or traced by another process of its OS user (PR_SET_DUMPABLE 0)."""

    async def body(executor):
        assert unpack_outcome(await executor.run(pack_task(_dumpable))) == 0

    trio.run(_with, ProcessExecutor(1), body)


def test_a_task_whose_user_has_no_os_user_fails_with_the_reason_and_the_executor_goes_on():
    """Per-tenant task users: no worker starts before a task comes; a cluster user with no OS user under the
    pattern gets a failed outcome naming why, once, and the next task is served the same way."""

    async def body(executor):
        assert not executor._workers  # none fresh: each worker starts for its user
        for user, why in (("alice", "'sparrow-no-such-alice': no such user on this host"), ("a/b", "cannot be an OS")):
            launch = lambda payload, done, user=user: executor.launch(payload, done, None, user)  # noqa: E731
            outcome = await wait_for_outcome(launch, pack_task(os.getpid))
            assert not outcome.ok and outcome.failure == SYSTEM
            assert "no worker could be started for the task" in outcome.error and why in outcome.error
        assert not executor._waiting and executor._alive == 0

    trio.run(_with, ProcessExecutor(1, task_user="sparrow-no-such-{user}"), body)
