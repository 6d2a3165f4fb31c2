"""SparrowExecutor keeps the `concurrent.futures` contract where the standard executors do: cancelling
twice, map's timeout and its references, shutdown with and without waiting (the standard library's own
tests of it run in tests/conformance/)."""

from __future__ import annotations

import concurrent.futures
import gc
import logging
import os
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor
from sparrow_runtime.wire.auth import SECRET_ENV


class Payload:
    """A result big enough to matter, whose freeing a weak reference sees."""


def _make_payload(_: int) -> Payload:
    return Payload()


def _wait_for(path: str, limit: float = 30.0) -> bool:
    """Whether `path` exists within `limit` seconds."""
    deadline = time.monotonic() + limit
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.path.exists(path)


def _hold_slot(started: str, release: str) -> str:
    """Hold a slot, from touching `started`, until `release` exists."""
    Path(started).touch()
    _wait_for(release)
    return release


def _touch(path: str) -> str:
    Path(path).touch()
    return path


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """One slot, and no pipelining: a task not started is not launched either (a task a node monitor
    took ahead counts as running, and cancelling it only drops its result), so a cancelled one never runs."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread", pipeline="off"), node_monitors=1, slots=1, dashboard=False
    ) as cluster:
        yield cluster


@pytest.fixture
def executor(cluster) -> Iterator[SparrowExecutor]:
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    yield ex
    ex.shutdown(wait=True)


@contextmanager
def slot_held(executor: SparrowExecutor, tmp_path: Path) -> Iterator[concurrent.futures.Future]:
    """The cluster's slot busy until the block ends (the tasks submitted in it wait their turn)."""
    started, release = tmp_path / "started", tmp_path / "release"
    blocker = executor.submit(_hold_slot, str(started), str(release))
    assert _wait_for(str(started))
    try:
        yield blocker
    finally:
        release.touch()


def test_cancelling_a_future_twice_returns_true_both_times_without_a_critical_log(executor, tmp_path, caplog):
    """The standard: cancel() of a cancelled future is True; it used to raise 'Future in unexpected
    state' and log CRITICAL."""
    with slot_held(executor, tmp_path):
        waiting = executor.submit(_touch, str(tmp_path / "never"))
        with caplog.at_level(logging.CRITICAL):
            assert waiting.cancel() is True
            assert waiting.cancel() is True
        assert waiting.cancelled()
        assert not [r for r in caplog.records if r.levelno >= logging.CRITICAL]


def test_shutdown_with_cancel_futures_after_a_user_cancel_returns_and_stops_the_thread(cluster, tmp_path):
    """A future the user cancelled, then shutdown(cancel_futures=True): no RuntimeError, the tasks not
    started are cancelled, the started one runs to its result, and the executor's thread ends."""
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    with slot_held(ex, tmp_path) as blocker:
        waiting = [ex.submit(_touch, str(tmp_path / f"never-{i}")) for i in range(3)]
        assert waiting[0].cancel()
        ex.shutdown(wait=False, cancel_futures=True)  # the scheduler cancels those it has not handed out
        concurrent.futures.wait(waiting, timeout=10)
        assert all(f.cancelled() for f in waiting)
    assert blocker.result(timeout=30) == str(tmp_path / "release")
    ex.shutdown(wait=True)
    assert not ex._loop.thread.is_alive()
    assert not list(tmp_path.glob("never-*"))


def test_closing_a_map_whose_tasks_were_cancelled_by_shutdown_raises_nothing(cluster, tmp_path):
    """map's cleanup cancels what its window holds, also futures already cancelled by shutdown: the
    caller sees the first one's CancelledError, not a RuntimeError of the cleanup."""
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    with slot_held(ex, tmp_path):
        results = ex.map(_touch, [str(tmp_path / f"never-{i}") for i in range(4)])
        ex.shutdown(wait=False, cancel_futures=True)
        with pytest.raises(concurrent.futures.CancelledError):
            next(results)
    ex.shutdown(wait=True)
    assert not list(tmp_path.glob("never-*"))


def test_a_map_that_times_out_cancels_the_task_it_timed_out_on(executor, tmp_path):
    """The task map was waiting for when its timeout passed never runs (CPython gh-95166), nor does the
    one after it once the iterator is closed."""
    with slot_held(executor, tmp_path) as blocker:
        results = executor.map(_touch, [str(tmp_path / f"never-{i}") for i in range(2)], timeout=0.3)
        with pytest.raises(concurrent.futures.TimeoutError):
            next(results)
        results.close()
    blocker.result(timeout=30)
    assert executor.submit(abs, -1).result(timeout=30) == 1  # the slot ran what came after them
    assert not list(tmp_path.glob("never-*"))


def test_a_result_of_map_is_freed_when_the_caller_drops_it(executor):
    """map's iterator keeps no reference to a result it yielded (CPython bpo-14406), even while the
    other tasks of its job are still to be yielded."""
    for payload in executor.map(_make_payload, range(10)):
        ref = weakref.ref(payload)
        del payload
        gc.collect()
        assert ref() is None


def test_shutdown_without_waiting_lets_the_submitted_tasks_run(cluster, tmp_path):
    """The standard: shutdown(wait=False) returns at once and the pending tasks still run (they were
    cancelled); then the executor's thread ends by itself."""
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    with slot_held(ex, tmp_path):
        waiting = [ex.submit(_touch, str(tmp_path / f"ran-{i}")) for i in range(3)]
        ex.shutdown(wait=False)
        with pytest.raises(RuntimeError, match="cannot schedule new futures after shutdown"):
            ex.submit(abs, -1)
    assert [f.result(timeout=30) for f in waiting] == [str(tmp_path / f"ran-{i}") for i in range(3)]
    ex._loop.thread.join(timeout=30)
    assert not ex._loop.thread.is_alive()


def test_an_executor_dropped_without_shutdown_ends_its_thread(cluster):
    """Nothing but the user holds an executor: dropped, it closes its connection and thread once its
    tasks are done, as a dropped ThreadPoolExecutor does."""
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    assert ex.submit(abs, -3).result(timeout=30) == 3
    thread = ex._loop.thread
    del ex
    gc.collect()
    thread.join(timeout=30)
    assert not thread.is_alive()


def _run_python(code: str, cluster: LocalCluster) -> subprocess.CompletedProcess:
    env = {**os.environ, SECRET_ENV: cluster.secret}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_at_the_interpreter_exit_the_submitted_tasks_run_and_an_atexit_submit_is_refused(cluster, tmp_path):
    """A script that submits and exits without shutdown(): its tasks still run, before the process ends
    (the standard's threading._register_atexit); a submit from an atexit hook raises RuntimeError."""
    marker = tmp_path / "ran"
    code = f"""if 1:
        import atexit, os, time
        from sparrow_runtime import SparrowExecutor

        @atexit.register
        def late():
            try:
                ex.submit(abs, -1)
            except RuntimeError as exc:
                print("refused:", exc)

        ex = SparrowExecutor({cluster.schedulers!r})
        ex.submit(time.sleep, 0.5)
        ex.submit(os.mkdir, {str(marker)!r})
    """
    done = _run_python(code, cluster)
    assert done.returncode == 0, done.stderr
    assert marker.is_dir()
    assert "refused: cannot schedule new futures after interpreter shutdown" in done.stdout


def test_a_started_task_is_running_and_cannot_be_cancelled_a_waiting_one_can(executor, tmp_path):
    """The standard: running() once the task started, and cancel() is then False (the task goes on to its
    result); a task still waiting is not running and cancel() is True. The client hears of a start from
    its scheduler (TaskStarted), so running() turns True shortly after the task starts."""
    with slot_held(executor, tmp_path) as blocker:
        waiting = executor.submit(_touch, str(tmp_path / "never"))
        deadline = time.monotonic() + 10
        while not blocker.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert blocker.running()
        assert blocker.cancel() is False and not blocker.cancelled()
        assert not waiting.running()
        assert waiting.cancel() is True
    assert blocker.result(timeout=30) == str(tmp_path / "release")
    assert not blocker.running()
    assert executor.submit(abs, -1).result(timeout=30) == 1
    assert not (tmp_path / "never").exists()


def test_a_maps_tasks_are_not_reported_started_and_dropping_it_cancels_those_not_handed_out(executor, tmp_path):
    """map's futures never reach the caller, so its jobs do not ask to be told of starts (no TaskStarted for each
    of its tasks): its task holding the slot stays unseen as started. Dropping the iterator cancels every task
    still without an outcome (the scheduler stops those it has not handed out; one running goes on to its end,
    its result dropped), and the executor serves on."""
    first, started, release = tmp_path / "first", tmp_path / "started", tmp_path / "release"
    first.touch()  # the first task returns at once: the iterator is under way when it is dropped
    results = executor.map(
        _hold_slot, [str(tmp_path / "0"), str(started), str(tmp_path / "never")], [str(first), str(release)] * 2
    )
    assert next(results) == str(first)
    assert _wait_for(str(started))
    time.sleep(0.05)  # many result-batching periods: a start would have been told by now
    with executor._loop.lock:
        pending = [f for f in executor._loop.pending if f._job.n_tasks == 3]
    assert len(pending) == 2 and all(f._job.started is None and not f.running() for f in pending)
    assert executor.submit(abs, -3)._job.started is not None  # submit's futures are told
    results.close()
    assert all(f.cancelled() for f in pending)
    release.touch()
    assert executor.submit(abs, -2).result(timeout=30) == 2


def test_a_settled_future_is_freed_when_dropped_without_a_garbage_collection(executor):
    """A future and its job hold each other only until the future is settled: then dropping the future (a
    submit's, a map's) frees it at once. Left in a cycle, every finished task waited for a full collection,
    which ran each future's finalizer there: most of the client's CPU in a loop of submits."""
    futures = [executor.submit(int, i) for i in range(20)]
    assert [f.result(timeout=30) for f in futures] == list(range(20))
    assert list(executor.map(int, range(5))) == list(range(5))
    refs = [weakref.ref(f) for f in futures]
    gc.disable()
    try:
        del futures
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_a_future_has_the_standards_fields_and_a_condition_that_waits_and_notifies(executor):
    """SparrowFuture sets Future.__init__'s fields itself (with a lighter condition: the lock's methods are not
    bound per instance); this fails when the running Python's Future gains a field. The condition still waits,
    times out and wakes, as result() and concurrent.futures.wait need."""
    future = executor.submit(int, 7)
    assert set(vars(concurrent.futures.Future())) <= set(vars(future))
    assert future.result(timeout=30) == 7
    condition = future._condition
    assert not any(callable(v) for v in vars(condition).values())  # nothing bound per instance
    with condition:
        assert condition._is_owned() and not condition.wait(timeout=0.01)
    assert not condition._is_owned()
    assert concurrent.futures.wait([future, executor.submit(int, 1)], timeout=30).not_done == set()


def test_an_executor_that_could_not_connect_leaves_nothing_to_close_at_the_exit(cluster):
    """A script whose SparrowExecutor found no scheduler (ConnectionLost) exits cleanly: its loop, which never ran,
    is not closed at the interpreter's exit (that raised in the exit hook)."""
    code = """if 1:
        import socket
        from sparrow_runtime import SparrowExecutor
        from sparrow_runtime.errors import ConnectionLost

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # nobody listens there once closed
        try:
            SparrowExecutor([f"127.0.0.1:{port}"], handshake_timeout=5)
        except ConnectionLost:
            print("refused")
    """
    done = _run_python(code, cluster)
    assert done.returncode == 0 and "refused" in done.stdout, done.stderr
    assert "Exception ignored" not in done.stderr and "AssertionError" not in done.stderr, done.stderr
