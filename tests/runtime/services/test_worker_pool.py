"""Worker pools (worker_pool.py, worker_main.py, task_codec.py): results, exceptions, crashes and restarts."""

import os
import threading
import time
from functools import partial

import cloudpickle
import pytest
import trio

from sparrow_runtime.errors import RemoteTraceback, TaskFailed
from sparrow_runtime.services.worker_pool import ProcessExecutor, ThreadExecutor
from sparrow_runtime.services.worker_starts import ForkStarts, SpawnStarts
from sparrow_runtime.wire.auth import SECRET_ENV, SECRET_FILE_ENV
from sparrow_runtime.wire.messages import CANCELLED, SYSTEM, TIMED_OUT, Outcome
from sparrow_runtime.wire.task_codec import pack_task, run_task, unpack_outcome

from ...process_tree import survivors


def _raise_value_error(x):
    raise ValueError(f"bad {x}")


def _identity(x):
    return x


def _fork_a_sleeper_then_die(pid_file):
    """Fork a child that lives 60 s (holding every descriptor of the worker), then kill the worker."""
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    with open(pid_file, "w") as f:
        f.write(str(child))
    os._exit(9)


def _secret_variables():
    return [os.environ.get(SECRET_ENV), os.environ.get(SECRET_FILE_ENV)]


async def _with_executor(kind, body):
    """Run `body(executor)` with a started executor: "process", "thread", or one made by `kind()`."""
    async with trio.open_nursery() as nursery:
        executor = kind() if callable(kind) else ProcessExecutor(1) if kind == "process" else ThreadExecutor(1)
        await executor.start(nursery)
        try:
            await body(executor)
        finally:
            await executor.aclose()
            nursery.cancel_scope.cancel()


class _Int(int):
    pass


@pytest.mark.parametrize("value", [None, True, 7, 2**70, 1.5, "caf\u00e9", b"x", _Int(3), (1, "a"), [2.5]])
def test_results_pickle_to_the_bytes_cloudpickle_makes(value):
    """Plain results take the C pickler (task_codec._PLAIN_TYPES): same bytes, same value."""
    assert run_task(pack_task(partial(_identity, value))) == Outcome(True, cloudpickle.dumps(value))


@pytest.mark.parametrize("kind", ["process", "thread"])
def test_result_and_exception_with_remote_traceback(kind):
    async def body(executor):
        assert unpack_outcome(await executor.run(pack_task(sum, ([1, 2, 3],)))) == 6
        with pytest.raises(ValueError, match="bad 7") as info:
            unpack_outcome(await executor.run(pack_task(partial(_raise_value_error, 7))))
        cause = info.value.__cause__
        assert isinstance(cause, RemoteTraceback) and "_raise_value_error" in cause.tb

    trio.run(_with_executor, kind, body)


def test_dying_process_fails_its_task_and_the_next_task_runs():
    async def body(executor):
        first_pid = unpack_outcome(await executor.run(pack_task(os.getpid)))
        died = await executor.run(pack_task(os._exit, (3,)))
        assert not died.ok and "died while running the task (exit status 3)" in died.error and died.failure == SYSTEM
        with pytest.raises(TaskFailed, match="exit status 3"):
            unpack_outcome(died)
        second_pid = unpack_outcome(await executor.run(pack_task(os.getpid)))
        assert second_pid != first_pid and executor.restarts == 1

    trio.run(_with_executor, "process", body)


def test_unpicklable_result_is_a_failed_outcome():
    async def body(executor):
        outcome = await executor.run(pack_task(lambda: (x for x in ())))
        assert not outcome.ok and "could not be pickled" in outcome.error
        assert outcome.failure == 0  # the task's own outcome

    trio.run(_with_executor, "thread", body)


def test_non_callable_task_is_refused_at_packing():
    with pytest.raises(TypeError, match="must be callable"):
        pack_task(42)


def test_thread_executor_threads_end_after_aclose_and_a_slow_task_does_not_block_the_other_slot():
    async def main():
        async with trio.open_nursery() as nursery:
            executor = ThreadExecutor(2)
            await executor.start(nursery)
            assert sum(t.name.startswith("sparrow-task-") for t in threading.enumerate()) == 2
            async with trio.open_nursery() as tasks:
                tasks.start_soon(executor.run, pack_task(time.sleep, (0.5,)))
                with trio.fail_after(0.4):  # served by the other thread meanwhile
                    for i in range(20):
                        assert unpack_outcome(await executor.run(pack_task(abs, (-i,)))) == i
            await executor.aclose()
            nursery.cancel_scope.cancel()
        deadline = time.monotonic() + 5
        while any(t.name.startswith("sparrow-task-") for t in threading.enumerate()) and time.monotonic() < deadline:
            await trio.sleep(0.01)
        assert not any(t.name.startswith("sparrow-task-") for t in threading.enumerate())

    trio.run(main)


def test_worker_whose_task_forked_a_long_lived_child_frees_its_slot_when_it_dies(tmp_path):
    """The node monitor learns of the death from the process, not from the socket the forked child
    still holds: the task fails at once, the slot serves the next task, and the child is killed."""
    pid_file = tmp_path / "child.pid"

    async def body(executor):
        with trio.fail_after(20):  # the child lives 60 s
            died = await executor.run(pack_task(_fork_a_sleeper_then_die, (str(pid_file),)))
            assert not died.ok and "died while running the task (exit status 9)" in died.error
            assert unpack_outcome(await executor.run(pack_task(abs, (-1,)))) == 1
        assert survivors([int(pid_file.read_text())], timeout=10) == []  # killed with its worker's group

    trio.run(_with_executor, "process", body)


def test_tasks_get_no_secret_in_their_environment_and_a_process_group_of_their_own(monkeypatch):
    """A task cannot print the cluster secret from its environment; its worker leads its own process
    group, so a terminal's Ctrl-C meant for the node monitor does not reach it."""
    monkeypatch.setenv(SECRET_ENV, "the cluster secret")
    monkeypatch.setenv(SECRET_FILE_ENV, "/etc/sparrow/secret")

    async def body(executor):
        assert unpack_outcome(await executor.run(pack_task(_secret_variables))) == [None, None]
        assert unpack_outcome(await executor.run(pack_task(os.getpgrp))) != os.getpgrp()

    trio.run(_with_executor, "process", body)


def test_a_running_task_is_stopped_by_killing_its_worker_and_the_slot_is_reused():
    """stop() ends a running task at once with the given cause and reason (a timeout, a forced
    cancel); its worker is replaced and the next task runs."""

    async def body(executor):
        got = []
        ticket = executor.launch(pack_task(time.sleep, (60,)), got.append)
        await trio.sleep(0.5)  # running in its worker
        assert executor.stop(ticket, TIMED_OUT, "past its time") is True
        with trio.fail_after(10):
            while not got:
                await trio.sleep(0.01)
        assert got == [Outcome(False, b"", "past its time", TIMED_OUT)]
        assert executor.stop(ticket, TIMED_OUT, "again") is False  # already ended
        assert unpack_outcome(await executor.run(pack_task(abs, (-4,)))) == 4

    trio.run(_with_executor, "process", body)


@pytest.mark.parametrize("kind", ["process", "thread"])
def test_a_task_waiting_for_a_worker_is_dropped_when_stopped(kind):
    async def body(executor):
        got = []
        busy = executor.launch(pack_task(time.sleep, (0.5,)), lambda outcome: got.append(("busy", outcome)))
        waiting = executor.launch(pack_task(abs, (-1,)), lambda outcome: got.append(("waiting", outcome)))
        assert executor.stop(waiting, CANCELLED, "cancelled") is True
        assert got == [("waiting", Outcome(False, b"", "cancelled", CANCELLED))]
        assert executor.stop(busy, CANCELLED, "cancelled") is (kind == "process")  # threads cannot be stopped
        with trio.fail_after(10):
            while len(got) < 2:
                await trio.sleep(0.01)

    trio.run(_with_executor, kind, body)


@pytest.mark.parametrize("starts", [SpawnStarts, ForkStarts])
def test_a_replacement_worker_that_starts_while_the_pool_closes_is_killed(starts):
    """A worker killed with its task is replaced; if the pool closes while the replacement's process
    starts, that process is killed and reaped instead of outliving the pool (spawned or forked: a fork
    server closed with the pool spawns it)."""
    spawning, release = trio.Event(), trio.Event()
    started: list = []

    async def main():
        async with trio.open_nursery() as nursery:
            executor = ProcessExecutor(1)
            executor._starts = policy = starts()
            real_start = policy.start

            async def start_after_close(*args, **kwargs):
                if len(started) == 1:  # the replacement: hold it until the pool has closed
                    spawning.set()
                    with trio.CancelScope(shield=True):
                        await release.wait()
                started.append(await real_start(*args, **kwargs))
                return started[-1]

            policy.start = start_after_close  # type: ignore[method-assign]
            await executor.start(nursery)
            busy = executor.launch(pack_task(time.sleep, (30,)), lambda outcome: None)
            with trio.fail_after(10):
                while busy.worker is None:  # its worker says ready, then takes it
                    await trio.sleep(0.01)
            assert executor.stop(busy, CANCELLED, "cancelled") is True
            with trio.fail_after(10):
                await spawning.wait()
                await executor.aclose()
                release.set()
                while len(started) < 2 or started[1].poll() is None:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        assert started[1].returncode == -9  # killed by the pool, not left running

    trio.run(main)


def test_a_task_launched_while_its_worker_starts_waits_for_the_worker_to_say_ready():
    """A ProcessExecutor's worker takes no task before its WorkerReady (it has imported): start() returns once
    every slot's worker said it, and a task launched while a killed worker's replacement starts waits in the
    executor; `started` is called for it as the ready replacement takes it (so its timeout does not count the
    worker's start)."""

    async def body(executor):
        started = []
        executor.started = started.append
        got = []
        first = executor.launch(pack_task(abs, (-1,)), got.append)
        assert first.worker is not None and not first.waited  # start() returned with the worker ready
        with trio.fail_after(30):
            while not got:
                await trio.sleep(0.01)
        running = executor.launch(pack_task(time.sleep, (60,)), got.append)
        assert running.worker is not None
        await trio.sleep(0.2)
        assert executor.stop(running, TIMED_OUT, "past its time") is True  # its worker is killed and replaced
        behind = executor.launch(pack_task(abs, (-2,)), got.append)
        assert behind.worker is None and behind.waited
        with trio.fail_after(30):
            while len(got) < 3:
                await trio.sleep(0.01)
        assert started == [behind] and unpack_outcome(got[2]) == 2

    trio.run(_with_executor, "process", body)
