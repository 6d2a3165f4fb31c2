"""LocalCluster processes with SparrowExecutor and Client: the whole runtime as a user runs it."""

import os
import time
from pathlib import Path

import pytest
import trio

from sparrow_runtime import (
    Client,
    ConnectionLost,
    Constraint,
    LocalCluster,
    NodeMonitorConfig,
    RemoteTraceback,
    SparrowExecutor,
    TaskFailed,
)

from ...process_tree import alive, node_monitor_pid


def _explode(x):
    raise RuntimeError(f"task {x} exploded")


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(schedulers=1, node_monitors=2, slots=1) as c:
        yield c


def test_map_returns_results_in_order_across_chunks(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, chunksize=7) as ex:
        assert list(ex.map(pow, range(50), [2] * 50)) == [i**2 for i in range(50)]


def test_task_exception_is_raised_in_the_caller_with_the_remote_traceback(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        future = ex.submit(_explode, 3)
        with pytest.raises(RuntimeError, match="task 3 exploded") as info:
            future.result(timeout=30)
        assert isinstance(info.value.__cause__, RemoteTraceback) and "_explode" in info.value.__cause__.tb
        with pytest.raises(RuntimeError, match="exploded"):
            list(ex.map(_explode, [1]))


def test_dying_executor_process_fails_its_task_and_the_next_tasks_run(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        with pytest.raises(TaskFailed, match=r"died while running the task \(exit status 7\)"):
            ex.submit(os._exit, 7).result(timeout=30)
        assert list(ex.map(abs, range(-20, 0))) == list(range(20, 0, -1))


def test_constraint_by_node_id_runs_only_there(cluster):
    async def main():
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            job = await client.submit_job([node_monitor_pid] * 10, constraints=Constraint(node_monitors=("nm-1",)))
            return await job.results()

    assert set(trio.run(main)) == {cluster.node_monitor_pids[1]}


def test_submit_after_shutdown_is_refused(cluster):
    ex = SparrowExecutor(cluster.schedulers, secret=cluster.secret)
    ex.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(abs, 1)


def test_wrong_secret_is_refused_at_connection(cluster):
    with pytest.raises(ConnectionLost, match="authentication failed"):
        SparrowExecutor(cluster.schedulers, secret="wrong")


def test_exit_leaves_no_process_behind():
    with LocalCluster(schedulers=1, node_monitors=1, slots=2) as c:
        with SparrowExecutor(c.schedulers, secret=c.secret) as ex:
            workers = set(ex.map(lambda _: (time.sleep(0.05), os.getpid())[1], range(6), chunksize=6))
        pids = c.pids + sorted(workers)
        assert all(alive(pid) for pid in pids)
    assert not any(alive(pid) for pid in pids)


def test_owner_killed_outright_leaves_no_service_behind():
    """A LocalCluster whose owning process is SIGKILLed (no cleanup runs) still stops its
    services and their executor processes: each service exits when its stdin pipe closes."""
    import signal
    import subprocess
    import sys

    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from sparrow_runtime import LocalCluster\n"
            "c = LocalCluster(schedulers=1, node_monitors=1, slots=1).__enter__()\n"
            "print(*c.pids, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


def _what_a_task_can_see(secret):
    parent_environ = Path(f"/proc/{node_monitor_pid()}/environ").read_bytes()
    return os.environ.get("SPARROW_SECRET"), secret.encode() in parent_environ


def test_no_task_finds_the_secret_in_its_environment_or_its_node_monitors(cluster):
    """The services get the secret from a file (removed once they have read it), not their
    environment: neither a task's environment nor its node monitor's /proc/PID/environ holds it."""
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        assert ex.submit(_what_a_task_can_see, cluster.secret).result(timeout=30) == (None, False)


def _sleep_then_report(flag, seconds):
    open(flag, "w").close()
    time.sleep(seconds)
    return "finished"


def test_close_drains_the_node_monitors_first_so_a_running_task_reports(tmp_path):
    """Closing the cluster while a task runs: the node monitor drains (as `sparrow node-monitor`
    does on SIGTERM), the task finishes and its outcome reaches the client before the schedulers stop."""

    async def main(cluster, flag):
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            job = await client.submit_job([lambda: _sleep_then_report(flag, 1.0)])
            with trio.fail_after(30):
                while not os.path.exists(flag):
                    await trio.sleep(0.01)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trio.to_thread.run_sync, cluster.close)
                    return await job.results()

    with LocalCluster(schedulers=1, node_monitors=1, slots=1) as cluster:
        assert trio.run(main, cluster, str(tmp_path / "started")) == ["finished"]


def test_bad_weight_is_refused_at_construction():
    with pytest.raises(ValueError, match="weights: expected USER=WEIGHT with a weight > 0, got 'alice=0'"):
        LocalCluster(node_monitor=NodeMonitorConfig(weights={"alice": 0}))


def test_unix_transport_runs_tasks_over_unix_sockets_and_removes_them():
    """transport="unix": every service listens on a Unix socket of a private folder, tasks run through
    them as over TCP, and the folder is gone after close."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), schedulers=1, node_monitors=2, slots=1, transport="unix"
    ) as c:
        assert all(a.startswith("unix:") for a in c.schedulers + c.node_monitors)
        folder = os.path.dirname(c.schedulers[0].removeprefix("unix:"))
        assert os.stat(folder).st_mode & 0o077 == 0
        with SparrowExecutor(c.schedulers, secret=c.secret) as ex:
            assert list(ex.map(pow, range(10), [2] * 10)) == [x**2 for x in range(10)]
    assert not os.path.exists(folder)


def test_unknown_transport_is_refused_at_construction():
    """A transport other than tcp or unix is a ValueError naming both."""
    with pytest.raises(ValueError, match="transport must be one of tcp, unix, got 'udp'"):
        LocalCluster(transport="udp")
