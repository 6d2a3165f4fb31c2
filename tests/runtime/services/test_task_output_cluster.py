"""What a task prints reaches the client that submitted it, through real processes (LocalCluster, process
executors): printed in the user's process after a (task, node) prefix, or kept only, and given by
SparrowFuture.output and JobHandle.output, and by `sparrow submit`; prints, C-level writes and subprocesses alike;
cut at the per-task cap with a marker, and a task that prints 1 GB grows no process; only the owning user receives
it or its tail in the task history."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig, SparrowExecutor
from sparrow_runtime.cli.main import main
from sparrow_runtime.wire import certs
from sparrow_runtime.wire.tls import TLS

from ...process_tree import node_monitor_pid

CAP = 64 * 1024


def _prints(x):
    print("hello", x)
    print("oops", x, file=sys.stderr)
    os.write(1, b"from C %d\n" % x)
    subprocess.run(["echo", f"from a subprocess {x}"], check=True)
    return x * 2


def _quiet(x):
    return x


def _prints_bytes(n, stream=1):
    chunk = b"y" * 65536
    for _ in range(n // len(chunk)):
        os.write(stream, chunk)
    os.write(stream, b"THE END\n")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the worker's peak RSS, bytes


def _vm_hwm(pid: int) -> int:
    """The peak RSS of process `pid`, bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def cluster():
    config = NodeMonitorConfig(output_rate=1 << 30)  # the rate cap is tested on its own
    with LocalCluster(schedulers=1, node_monitors=2, slots=2, node_monitor=config, dashboard=False) as c:
        yield c


def test_an_executors_tasks_print_in_the_users_process_with_a_prefix_and_their_futures_give_it(cluster, capfd):
    """Python prints, a C-level write to fd 1 and a subprocess's output reach the submitting process: each
    line on its stdout (stderr for what went to stderr) after `(task JOB.TASK on NODE)`; future.output() gives
    the text, each stream apart on request. A task that prints nothing gives ""."""
    with SparrowExecutor(cluster.schedulers, **cluster.credentials) as ex:
        future = ex.submit(_prints, 3)
        assert future.result(timeout=60) == 6
        assert future.output(timeout=60, stream="stdout") == "hello 3\nfrom C 3\nfrom a subprocess 3\n"
        assert future.output(stream="stderr") == "oops 3\n"
        assert future.output() == "hello 3\nfrom C 3\nfrom a subprocess 3\noops 3\n"
        quiet = ex.submit(_quiet, 1)
        assert quiet.result(timeout=60) == 1 and quiet.output() == ""
        assert quiet._job.outputs is None  # nothing came for it
    out, err = capfd.readouterr()
    prefix = f"(task {future._job.job_id}.0 on nm-"
    lines = [line for line in out.splitlines() if line.startswith(prefix)]
    assert [line.split(") ", 1)[1] for line in lines] == ["hello 3", "from C 3", "from a subprocess 3"]
    assert any(line.startswith(prefix) and line.endswith(") oops 3") for line in err.splitlines())


def test_output_keep_prints_nothing_and_still_gives_each_tasks_output(cluster, capfd):
    with SparrowExecutor(cluster.schedulers, **cluster.credentials, output="keep") as ex:
        futures = [ex.submit(_prints, i) for i in range(4)]
        assert [f.result(timeout=60) for f in futures] == [0, 2, 4, 6]
        assert [f.output(stream="stderr") for f in futures] == [f"oops {i}\n" for i in range(4)]
    out, err = capfd.readouterr()
    assert "(task " not in out and "(task " not in err


def test_a_clients_jobhandle_gives_each_tasks_output_and_a_callable_gets_it_as_it_arrives(cluster):
    async def main():
        got = []
        async with Client(cluster.schedulers, **cluster.credentials, output=lambda *a: got.append(a)) as client:
            job = await client.submit_job([partial(_prints, i) for i in range(3)])
            assert await job.results() == [0, 2, 4]
            return job, got

    job, got = trio.run(main)
    assert [job.output(t, "stdout").splitlines()[0] for t in range(3)] == ["hello 0", "hello 1", "hello 2"]
    assert sorted((task, out.stderr) for _, task, out in got) == [(t, f"oops {t}\n".encode()) for t in range(3)]
    assert {job_id for job_id, _, _ in got} == {job.job_id}
    assert {out.node for _, _, out in got} <= set(cluster.node_ids)
    with pytest.raises(ValueError, match="stream must be"):
        job.output(0, "stdin")


def _prints_then_raises(x):
    print("about to fail on", x)
    raise ValueError(f"bad {x}")


def test_a_task_that_raises_still_sends_what_it_printed(cluster):
    with SparrowExecutor(cluster.schedulers, **cluster.credentials, output="keep") as ex:
        future = ex.submit(_prints_then_raises, 5)
        with pytest.raises(ValueError, match="bad 5"):
            future.result(timeout=60)
        assert future.output() == "about to fail on 5\n"
        (record,) = ex.tasks(job=future._job.job_id)
    assert (record.state, record.output_tail) == ("raised", "about to fail on 5\n")


def test_a_bad_output_setting_is_refused_before_connecting():
    with pytest.raises(ValueError, match="output must be one of print, keep or a callable"):
        Client(["127.0.0.1:1"], secret="x", output="loud")


def test_output_past_the_cap_is_cut_with_a_marker_and_the_task_succeeds(cluster):
    with SparrowExecutor(cluster.schedulers, **cluster.credentials, output="keep") as ex:
        future = ex.submit(_prints_bytes, 1_000_000, 2)
        future.result(timeout=60)
        text = future.output(stream="stderr")
    assert text.startswith("y" * 1000) and text.endswith("yTHE END\n")
    assert "bytes of output left out here: over the task's output cap of 65,536 bytes]" in text
    assert len(text) < CAP + 200


def test_a_task_printing_a_gigabyte_grows_neither_its_worker_nor_its_node_monitor_nor_the_client(cluster):
    """1 GB written to fd 1 passes through the worker's pipe and is counted, not kept: the worker's peak RSS
    stays under 100 MB, the scheduler's and the node monitors' peak RSS grow by less than 20 MB, and the client
    receives the capped output only (the output bytes that reached it)."""
    before = [_vm_hwm(pid) for pid in cluster.pids]

    async def main():
        async with Client(cluster.schedulers, **cluster.credentials, output="keep") as client:
            job = await client.submit_job([partial(_prints_bytes, 1 << 30)], timeout=300)
            (peak,) = await job.results()
            return peak, job.output(0), client.traffic["output_received"]

    peak, text, received = trio.run(main)
    assert peak < 100 * 2**20
    assert text.endswith("yTHE END\n") and f"{(1 << 30) + 8 - CAP:,} bytes of output left out" in text
    assert len(text) < CAP + 200
    growth = [_vm_hwm(pid) - b for pid, b in zip(cluster.pids, before, strict=True)]
    assert max(growth) < 20 * 2**20, growth
    assert received == len(text.encode())  # what crossed to the client: the capped output only


def _tls_args(folder, name):
    return ["--tls-ca", str(folder / "ca.pem"), "--tls-cert", str(folder / f"{name}.pem"), "--tls-key",
            str(folder / f"{name}-key.pem")]  # fmt: skip


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    config = NodeMonitorConfig(output_rate=1 << 30)
    with LocalCluster(schedulers=1, node_monitors=1, slots=2, node_monitor=config, dashboard=False, tls=folder) as c:
        for name in ("alice", "bob"):
            certs.issue(folder, name, "client")
        yield c, folder


def _secret_printer(x):
    print(f"alice's secret {x}")
    return x


def test_only_the_owning_user_receives_a_tasks_output_or_its_tail(tls_cluster, capsys):
    """On TLS, alice's and bob's clients run at once: each receives only its own tasks' output. The task
    history keeps the end of alice's output for alice and the admin; bob, asking for alice's tasks (or all),
    gets none of it, by Client.tasks or `sparrow tasks --output`."""
    c, folder = tls_cluster

    async def run(name, fn):
        got = []
        tls = TLS(folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem")
        async with Client(c.schedulers, tls=tls, output=lambda *a: got.append(a[2])) as client:
            job = await client.submit_job([partial(fn, i) for i in range(4)])
            await job.results()
            return job.job_id, got

    async def both():
        results = {}
        async with trio.open_nursery() as nursery:
            for name, fn in (("alice", _secret_printer), ("bob", _prints)):
                nursery.start_soon(lambda n=name, f=fn: _store(results, n, run(n, f)))
        return results

    results = trio.run(both)
    alice_job, alice_got = results["alice"]
    _, bob_got = results["bob"]
    assert sorted(o.stdout for o in alice_got) == [f"alice's secret {i}\n".encode() for i in range(4)]
    assert len(bob_got) == 4 and not any(b"secret" in o.stdout + o.stderr for o in bob_got)

    def tasks(name, **query):
        tls = TLS(folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem")

        async def ask():
            async with Client(c.schedulers, tls=tls) as client:
                return await client.tasks(**query)

        return trio.run(ask)

    assert sorted(r.output_tail for r in tasks("alice", job=alice_job)) == [f"alice's secret {i}\n" for i in range(4)]
    assert tasks("bob", user="alice") == [] and tasks("bob", job=alice_job) == []
    assert not any("secret" in r.output_tail for r in tasks("bob"))
    assert main(["tasks", "--scheduler", c.schedulers[0], *_tls_args(folder, "bob"), "--output", "--json"]) == 0
    assert "secret" not in capsys.readouterr().out
    admin = c.client_tls_files
    admin_args = ["--tls-ca", admin[0], "--tls-cert", admin[1], "--tls-key", admin[2]]
    assert main(["tasks", "--scheduler", c.schedulers[0], *admin_args, "--job", str(alice_job), "--output"]) == 0
    shown = capsys.readouterr().out
    assert f"task {alice_job}.3 (ok, nm-0): the end of its output" in shown and "alice's secret 3" in shown


async def _store(results, name, coro):
    results[name] = await coro


def test_sparrow_submit_prints_what_a_callable_prints_and_keep_hides_it(cluster, tmp_path, monkeypatch, capsys):
    (tmp_path / "printing.py").write_text("def work(i):\n    print('working on', i)\n    return i\n")
    secret = tmp_path / "secret"
    secret.write_text(cluster.secret)
    secret.chmod(0o600)
    monkeypatch.chdir(tmp_path)
    base = ["submit", "--scheduler", cluster.schedulers[0], "--secret-file", str(secret), "--tasks", "2"]
    assert main([*base, "printing:work"]) == 0
    out = capsys.readouterr().out.splitlines()
    printed = sorted(line.split(") ", 1)[1] for line in out if line.startswith("(task "))
    assert printed == ["working on 0", "working on 1"]
    assert all(re.fullmatch(r"\(task \d+\.[01] on nm-[01]\) working on [01]", line) for line in out if "(task" in line)
    assert main([*base, "--output", "keep", "printing:work"]) == 0
    assert "working on" not in capsys.readouterr().out


def _prints_a_while(n_bytes, lines):
    for i in range(lines):
        print(f"line {i} " + "z" * (n_bytes // lines), flush=True)
    return lines


def test_a_node_monitors_rate_cap_cuts_output_past_it_with_a_marker_and_no_task_fails():
    """A node monitor at 50 kB/s (its bucket saving 4 tasks at the 64 KiB cap) runs 20 tasks printing 40 kB each at
    once: every task succeeds, some outputs end in the rate's marker, and the output bytes that reach the client are
    within the bucket and the rate over the run."""
    rate, cap = 50_000, 64 * 1024
    config = NodeMonitorConfig(output_rate=rate, output_cap=cap)
    with (
        LocalCluster(schedulers=1, node_monitors=1, slots=2, node_monitor=config, dashboard=False) as c,
        SparrowExecutor(c.schedulers, **c.credentials, output="keep") as ex,
    ):
        started = time.monotonic()
        futures = [ex.submit(_prints_a_while, 40_000, 40) for _ in range(20)]
        assert [f.result(timeout=120) for f in futures] == [40] * 20
        elapsed = time.monotonic() - started
        texts = [f.output() for f in futures]
    marker = "bytes of output left out here: over the node monitor's output rate cap of 50,000 bytes/s]"
    cut = [t for t in texts if marker in t]
    assert cut and len(cut) < 20
    passed = sum(len(t.split("\n[sparrow: ")[0]) for t in texts)
    assert passed <= 4 * cap + rate * (elapsed + 1), (passed, elapsed)


def _prints_until_killed(folder, x):
    node_monitor = node_monitor_pid()
    (folder / f"nm-{node_monitor}").write_text("running")
    for i in range(150):
        print(f"attempt on {node_monitor}: line {i}", flush=True)
        time.sleep(0.01)
    return x


def test_a_node_monitor_killed_while_its_task_prints_leaves_one_outcome_from_the_retry(tmp_path):
    """A task printing steadily when its node monitor is killed (SIGKILL) is relaunched on the other one: its
    future gets one result, the client receives one output (the retry's, from the node monitor that lived: what
    was in flight died with the other), and the scheduler recorded the lost attempt (system) and the retry (ok)."""
    config = NodeMonitorConfig(output_rate=1 << 30)
    got = []
    with (
        LocalCluster(schedulers=1, node_monitors=2, slots=1, node_monitor=config, dashboard=False) as c,
        SparrowExecutor(c.schedulers, **c.credentials, output=lambda *a: got.append(a[2]), retries=2) as ex,
    ):
        future = ex.submit(_prints_until_killed, tmp_path, 7)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("nm-*")):
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.01)
        (first,) = tmp_path.glob("nm-*")
        victim = int(first.name.removeprefix("nm-"))
        assert victim in c.node_monitor_pids
        time.sleep(0.3)  # output in flight: lines printed, the task far from done
        os.kill(victim, signal.SIGKILL)
        assert future.result(timeout=120) == 7
        output = future.output()
        states = sorted(r.state for r in ex.tasks())
    survivor = next(pid for pid in c.node_monitor_pids if pid != victim)
    (only,) = got
    assert only.stdout.decode() == output and only.node != ""
    assert output.count("line 149") == 1 and f"attempt on {survivor}:" in output
    assert f"attempt on {victim}:" not in output
    assert states == ["ok", "system"]
