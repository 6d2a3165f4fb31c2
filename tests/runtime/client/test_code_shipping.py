"""Code shipped with the job, with real processes: a package that exists only in a temporary folder of the client
runs on the cluster through SparrowExecutor and Client, in its working directory; a changed file is run by the
next job in the same worker (no stale module); a job without code in that worker does not see it; each user's
code is unpacked in the user's own folder; a hostile archive is refused at the node monitor, which goes on."""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import sys
import zipfile
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig, SparrowExecutor
from sparrow_runtime.client.job import build_submit
from sparrow_runtime.data.code_archive import Packed
from sparrow_runtime.data.dependent import CodeRef, with_code
from sparrow_runtime.errors import CodeError, TaskFailed
from sparrow_runtime.wire.task_codec import pack_task

LIB = """\
import os

VERSION = {version}


def where(x=None):
    return VERSION, __file__, os.getcwd(), os.getpid(), x


def read(name):
    with open(name) as f:
        return f.read()
"""


def write_lib(root, version):
    pkg = root / "shiplib"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(LIB.format(version=version))


@pytest.fixture
def shiplib(tmp_path, monkeypatch):
    """The package `shiplib`, version 1, importable here only (from tmp_path/src), and a working directory."""
    src = tmp_path / "src"
    write_lib(src, 1)
    work = tmp_path / "work"
    work.mkdir()
    (work / "table.csv").write_text("a,b\n1,2\n")
    monkeypatch.syspath_prepend(str(src))
    module = importlib.import_module("shiplib")
    yield module, src, work
    for name in [n for n in sys.modules if n == "shiplib" or n.startswith("shiplib.")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def cluster():
    """One node monitor with one slot: successive tasks of a user run in the same worker process."""
    with LocalCluster(schedulers=1, node_monitors=1, slots=1, dashboard=False) as made:
        yield made


@pytest.mark.slow
def test_a_package_only_on_the_client_runs_and_the_next_job_runs_a_changed_file(cluster, shiplib):
    """Version 1 runs from the node monitor's cache (py/ first on sys.path, wd/ the working directory, where
    the shipped data file is read); after the file changes, the next job runs version 2 in the very same worker
    process, from a new entry: the module it had imported is not served again. Dependents run in it too."""
    module, src, work = shiplib
    with SparrowExecutor(cluster.schedulers, **cluster.credentials, py_modules=[module], working_dir=work) as ex:
        ex.client.code.recheck = 0.0  # every job looks at the files (a user's next job: a second later)
        version, file, cwd, pid, _ = ex.submit(module.where).result(timeout=60)
        assert version == 1
        entry = os.path.dirname(os.path.dirname(os.path.dirname(file)))
        assert file == os.path.join(entry, "py", "shiplib", "__init__.py") and "sparrow-code-" in entry
        assert not file.startswith(str(src))
        assert cwd == os.path.join(entry, "wd")
        assert ex.submit(module.read, "table.csv").result(timeout=60) == "a,b\n1,2\n"
        first = ex.submit(module.where, 7)
        assert ex.submit(module.where, first).result(timeout=60)[4][4] == 7  # a dependent, in the same code

        write_lib(src, 2)
        version2, file2, _, pid2, _ = ex.submit(module.where).result(timeout=60)
        assert (version2, pid2) == (2, pid)  # the same worker, the new code
        assert file2 != file and os.path.basename(entry) not in file2
        assert [r[0] for r in ex.map(module.where, range(5))] == [2] * 5


@pytest.mark.slow
def test_a_job_without_code_does_not_see_the_code_a_job_before_it_shipped(cluster, shiplib):
    """After a task with shiplib ran in the worker, a task of the same user without code, in that very worker,
    cannot import it, and runs in the worker's own working directory again."""
    module, _, work = shiplib
    with SparrowExecutor(cluster.schedulers, **cluster.credentials, py_modules=[module], working_dir=work) as ex:
        _, _, code_cwd, pid, _ = ex.submit(module.where).result(timeout=60)
    with SparrowExecutor(cluster.schedulers, **cluster.credentials) as plain:
        assert plain.submit(os.getpid).result(timeout=60) == pid
        with pytest.raises(ModuleNotFoundError, match="shiplib"):
            plain.submit(importlib.import_module, "shiplib").result(timeout=60)
        assert plain.submit(os.getcwd).result(timeout=60) != code_cwd


@pytest.mark.slow
def test_each_user_has_the_code_unpacked_in_a_folder_of_their_own(cluster, shiplib):
    """The same package for alice and for bob: two entries, in user-alice and user-bob, each folder 0700."""
    module, _, _ = shiplib
    files = {}
    for user in ("alice", "bob"):
        with SparrowExecutor(cluster.schedulers, **cluster.credentials, user=user, py_modules=[module]) as ex:
            files[user] = ex.submit(module.where).result(timeout=60)[1]
    user_dirs = {
        user: os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(f)))) for user, f in files.items()
    }
    assert os.path.basename(user_dirs["alice"]) == "user-alice"
    assert os.path.basename(user_dirs["bob"]) == "user-bob"
    assert os.path.dirname(user_dirs["alice"]) == os.path.dirname(user_dirs["bob"])
    for folder in user_dirs.values():
        assert os.stat(folder).st_mode & 0o777 == 0o700


@pytest.mark.slow
def test_the_async_client_ships_code_and_a_change_reaches_its_next_job(cluster, shiplib):
    """Client(py_modules=...) is the same through submit_job."""
    module, src, _ = shiplib

    async def main():
        async with Client(cluster.schedulers, **cluster.credentials, py_modules=[src / "shiplib"]) as client:
            client.code.recheck = 0.0
            job = await client.submit_job([partial(module.where, i) for i in range(3)])
            first = await job.results()
            write_lib(src, 3)
            job = await client.submit_job([module.where])
            return first, await job.results()

    first, second = trio.run(main)
    assert [r[0] for r in first] == [1, 1, 1] and second[0][0] == 3


def hostile_zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("py/ok.py", "X = 1\n")
        archive.writestr("py/../../../escaped.py", "X = 2\n")
    return buf.getvalue()


@pytest.mark.slow
def test_a_hostile_archive_or_other_bytes_than_named_fail_the_task_and_the_node_monitor_goes_on(cluster):
    """A client that skips its own checks uploads an archive with a path out of its folder: the task fails with
    the reason, nothing lands outside; a task naming a digest its bytes do not have fails too; the next task
    runs."""
    data = hostile_zip()

    async def main():
        async with Client(cluster.schedulers, **cluster.credentials) as client:
            ref = await client._code_uploads.ship(Packed(data, hashlib.sha256(data).digest(), 2, 12))
            wrong = CodeRef(ref.ref, bytes(32))
            outcomes = []
            for code in (ref, wrong):
                payload = with_code(pack_task(os.getpid), code)
                job = client.send_job(build_submit([payload], "", 0, None, None))
                outcomes.append(await job.outcomes())
            plain = await client.submit_job([os.getpid])
            return outcomes, await plain.results()

    (hostile, wrong), plain = trio.run(main)
    with pytest.raises(TaskFailed, match=r"'\.\.' part"):
        hostile[0].result()
    with pytest.raises(TaskFailed, match="not the archive"):
        wrong[0].result()
    assert isinstance(plain[0], int)


def test_the_client_refuses_code_that_breaks_a_limit_before_connecting(tmp_path):
    """A link out of a shipped folder is a CodeError from the constructor, before any connection."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", tmp_path / "pkg" / "leak.txt")
    with pytest.raises(CodeError, match="links out"):
        SparrowExecutor("127.0.0.1:9", secret="s" * 32, py_modules=[tmp_path / "pkg"])
    with pytest.raises(CodeError, match="not a directory"):
        Client("127.0.0.1:9", secret="s" * 32, working_dir=tmp_path / "missing")


@pytest.mark.slow
def test_a_node_monitor_with_thread_executors_fails_code_tasks_saying_why(shiplib):
    """Threads share one interpreter across users: a job that ships code fails there, naming the reason."""
    module, _, _ = shiplib
    with (
        LocalCluster(node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=1, dashboard=False) as threads,
        SparrowExecutor(threads.schedulers, **threads.credentials, py_modules=[module], retries=0) as ex,
        pytest.raises(TaskFailed, match="executor 'thread'"),
    ):
        ex.submit(module.where).result(timeout=60)


@pytest.mark.slow
def test_a_node_monitor_keeps_at_most_its_code_cache_entries(tmp_path, shiplib):
    """`--code-cache-entries 1` (NodeMonitorConfig.code_cache_entries): after 31 tasks of the first archive (most
    of them handed ahead to the busy worker), the second archive's first task removes the first's entry, which no
    task holds any more (a hold left behind would keep it); the first archive runs again, unpacked anew."""
    module, src, _ = shiplib
    config = NodeMonitorConfig(code_cache_entries=1)
    with (
        LocalCluster(node_monitor=config, node_monitors=1, dashboard=False) as small,
        SparrowExecutor(small.schedulers, **small.credentials, py_modules=[module]) as ex,
    ):
        ex.client.code.recheck = 0.0
        first = ex.submit(module.where).result(timeout=60)[1]
        assert {r[1] for r in ex.map(module.where, range(30))} == {first}  # pipelined: handed ahead, each held once
        write_lib(src, 2)
        second = ex.submit(module.where).result(timeout=60)[1]
        assert os.path.exists(second) and not os.path.exists(first)
        write_lib(src, 1)
        assert ex.submit(module.where).result(timeout=60)[:2] == (1, first)
        assert not os.path.exists(second)


@pytest.mark.slow
def test_another_user_cannot_run_with_the_code_alice_uploaded(cluster_certs, shiplib):
    """Over TLS: bob's task that names alice's uploaded archive (its exact reference and digest) fails, its node
    monitor being refused alice's value for bob's task; alice's own task runs with it."""
    from ..services.task_user_host import node_with_task_user, tls

    module, _, _ = shiplib
    certs = str(cluster_certs.directory)

    async def main():
        async with (
            node_with_task_user(certs, None) as address,
            Client([address], tls=tls(certs, "alice"), py_modules=[module]) as alice,
            Client([address], tls=tls(certs, "bob")) as bob,
        ):
            ref = await alice.job_code()
            mine = await (await alice.submit_job([module.where])).results()
            theirs = bob.send_job(build_submit([with_code(pack_task(os.getpid), ref)], "", 0, None, None))
            return mine, await theirs.outcomes()

    mine, (theirs,) = trio.run(main)
    assert mine[0][0] == 1
    with pytest.raises(TaskFailed, match=r"holds no such value of the task's user|another user's"):
        theirs.result()
