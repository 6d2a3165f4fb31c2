"""`sparrow local` with `sparrow submit` and `sparrow status` on the same host, as a user runs them:
the clients find the cluster with no flags; outcomes stream back; Ctrl-C and SIGTERM stop everything."""

from __future__ import annotations

import json
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sparrow_runtime.services.cpus import available_cpus, format_cpu_list, local_layout

from .conftest import Running, clean_env, run_sparrow

READY = r"Press Ctrl-C to stop"


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """One `sparrow local` (2 node monitors x 1 slot) for the tests of this module."""
    home = tmp_path_factory.mktemp("local")
    env = clean_env(home)
    cluster = Running(["local", "--node-monitors", "2", "--slots", "1"], env)
    try:
        cluster.wait_for(READY)
        yield cluster, env, home
    finally:
        cluster.stop(signal.SIGKILL, timeout=10)
        cluster.close()


def test_local_prints_how_to_connect_and_keeps_its_keys_private(local):
    """The addresses and the TLS client files are printed; the state, the secret and every key are
    readable by the owner only, in a 0700 folder; it runs on TLS by default."""
    cluster, env, _ = local
    state_path = Path(env["XDG_RUNTIME_DIR"]) / "sparrow" / "local.json"
    state = json.loads(state_path.read_text())
    assert "process executors, TLS)" in cluster.output
    assert f"schedulers:    {state['schedulers'][0]}" in cluster.output
    schedulers, nodes = local_layout(1, 2, available_cpus())  # where each service runs
    layout = f"node monitors {' | '.join(map(format_cpu_list, nodes))}; schedulers {format_cpu_list(schedulers[0])}"
    assert f"CPUs:          {layout} (--share-cpus: any)" in cluster.output
    assert f"TLS client:    {state['tls']['cert']}" in cluster.output
    tls_dir = Path(state["tls"]["ca"]).parent
    assert stat.S_IMODE(tls_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(state_path.parent.stat().st_mode) == 0o700  # the state folder, made before tls/ in it
    keys = sorted(tls_dir.glob("*-key.pem"))
    assert len(keys) == 4  # the CA's, the scheduler's, the node monitor's, the client's
    for path in (state_path, Path(state["secret_file"]), *keys):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Path(state["secret_file"]).read_text().strip() not in cluster.output


def test_submit_shell_command_gets_each_task_index(local):
    """Each task of `submit -- CMD` runs CMD with its own SPARROW_TASK_INDEX; exit status 0."""
    _, env, _ = local
    done = run_sparrow("submit", "--tasks", "5", "--", "sh", "-c", "echo index=$SPARROW_TASK_INDEX", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(line for line in done.stdout.splitlines()) == [f"[{i}] index={i}" for i in range(5)]
    assert "5 tasks, 5 succeeded, 0 failed" in done.stderr
    started = re.search(r"^sparrow submit: job (\d+) accepted: 5 tasks$", done.stderr, flags=re.M)
    assert started and f"job {started.group(1)}: 5 tasks" in done.stderr  # the same id as the summary's


def test_submit_reports_a_failing_task_and_exits_non_zero(local):
    """One task exiting 3 is reported with its exit status and stderr; the others succeed; exit status 1."""
    _, env, _ = local
    script = 'if [ "$SPARROW_TASK_INDEX" = 1 ]; then echo broken >&2; exit 3; fi; echo fine'
    done = run_sparrow("submit", "--tasks", "3", "--", "sh", "-c", script, env=env)
    assert done.returncode == 1
    assert "[1] failed: exit status 3: broken" in done.stdout
    assert "[0] fine" in done.stdout and "[2] fine" in done.stdout
    assert "3 tasks, 2 succeeded, 1 failed" in done.stderr


def test_submit_callable_from_a_local_module(local, tmp_path):
    """`submit module:function` calls function(index) on the cluster, for a module the workers cannot import."""
    _, env, _ = local
    (tmp_path / "jobs_here.py").write_text("def square(i):\n    return i * i\n\ndef boom(i):\n    raise KeyError(i)\n")
    done = run_sparrow("submit", "--tasks", "4", "jobs_here:square", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["[0] 0", "[1] 1", "[2] 4", "[3] 9"]
    failed = run_sparrow("submit", "--tasks", "2", "--traceback", "jobs_here:boom", env=env, cwd=tmp_path)
    assert failed.returncode == 1
    assert "[0] failed: KeyError: 0" in failed.stdout and "in boom" in failed.stdout


def test_submit_with_resources_runs_each_task_where_it_fits_and_refuses_bad_amounts(local):
    """`submit --resources cpus=0.5`: each task is told its node monitor (a task with resources is); a negative
    amount or an unknown unit is refused by name before anything is sent; a request no node monitor holds fails
    after the scheduler's placement wait, naming the largest capacity seen."""
    _, env, _ = local
    done = run_sparrow(
        "submit", "--tasks", "2", "--resources", "cpus=0.5", "--", "sh", "-c", "echo $SPARROW_NODE", env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == ["[0]", "[1]"]
    assert all(line.split()[1] in ("nm-0", "nm-1") for line in done.stdout.splitlines()), done.stdout
    for bad, named in (
        ("gpu=-1", "gpu='-1': the amount must be >= 0"),
        ("memory=4XB", "memory='4XB': unknown unit 'XB'"),
        ("cpus=nan", "cpus='nan': the amount must be a finite number"),
    ):
        refused = run_sparrow("submit", "--resources", bad, "--", "true", env=env)
        assert refused.returncode == 2 and named in refused.stderr, (bad, refused.stderr)
    too_big = run_sparrow("submit", "--resources", "gpu=64", "--", "true", env=env)
    assert too_big.returncode == 1
    unplaceable = r"no live node monitor has the resources gpu=64 \(the largest capacity seen: gpu=\d+\)"
    assert re.search(unplaceable, too_big.stdout), too_big.stdout  # the GPUs detected here: none, or the host's


def test_status_shows_the_registered_node_monitors(local):
    """`sparrow status` lists both node monitors with their slots; --json gives the same as data."""
    _, env, _ = local
    done = run_sparrow("status", env=env)
    assert done.returncode == 0, done.stderr
    assert "2 node monitors" in done.stdout and "nm-0" in done.stdout and "nm-1" in done.stdout
    data = json.loads(run_sparrow("status", "--json", env=env).stdout)
    assert sorted((n["node_id"], n["slots"]) for n in data[0]["nodes"]) == [("nm-0", 1), ("nm-1", 1)]
    assert all(n["silent_for"] < 5 for n in data[0]["nodes"])


def test_scheduler_and_tls_flags_point_elsewhere(local, tmp_path):
    """--scheduler and --tls-* override the local state; a certificate of another CA is refused in one line."""
    from sparrow_runtime.wire.certs import init_ca, issue

    _, env, _ = local
    state = json.loads((Path(env["XDG_RUNTIME_DIR"]) / "sparrow" / "local.json").read_text())
    elsewhere = clean_env(tmp_path)  # no local state here
    tls = state["tls"]
    ok = run_sparrow(
        "submit",
        "--scheduler",
        state["schedulers"][0],
        "--tls-ca",
        tls["ca"],
        "--tls-cert",
        tls["cert"],
        "--tls-key",
        tls["key"],
        "math:factorial",
        env=elsewhere,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "[0] 1"
    other = tmp_path / "other-ca"
    init_ca(other)
    cert, key = issue(other, "mallory", "client")
    refused = run_sparrow(
        "submit",
        "--scheduler",
        state["schedulers"][0],
        "--tls-ca",
        str(other / "ca.pem"),
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        "math:factorial",
        env=elsewhere,
    )
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "TLS:" in refused.stderr, refused.stderr
    secret = run_sparrow(
        "submit",
        "--scheduler",
        state["schedulers"][0],
        "--secret-file",
        state["secret_file"],
        "math:factorial",
        env=elsewhere,
    )
    assert secret.returncode == 1 and secret.stderr.count("\n") == 1, secret.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_every_process_and_removes_the_state(running, tmp_path, sig):
    """Ctrl-C (SIGINT) or SIGTERM: exit 0, no service or executor process left, no state file left."""
    env = clean_env(tmp_path)
    cluster = running(["local", "--node-monitors", "1", "--slots", "2"], env)
    cluster.wait_for(READY)
    assert len(cluster.tree) >= 4  # scheduler, node monitor, its 2 executor workers
    assert cluster.stop(sig) == 0
    assert cluster.leftover == []
    assert "sparrow local: stopping" in cluster.output
    assert not (Path(env["XDG_RUNTIME_DIR"]) / "sparrow" / "local.json").exists()
    after = run_sparrow("status", env=env)
    assert after.returncode == 1 and "start `sparrow local`" in after.stderr


PYTHON_CLIENTS = """
import trio
from sparrow_runtime import Client, SparrowExecutor

with SparrowExecutor() as ex:
    print(sum(ex.map(abs, range(-50, 0))))

async def main():
    async with Client() as client:
        job = await client.submit_job([lambda: 1] * 3)
        print("client", await job.results())

trio.run(main)
"""


def test_python_clients_with_no_address_find_the_local_cluster(local):
    """SparrowExecutor() and Client(), like `sparrow submit`, connect to the `sparrow local` here."""
    _, env, home = local
    script = Path(home) / "clients.py"
    script.write_text(PYTHON_CLIENTS)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "1275\nclient [1, 1, 1]\n"), done.stderr


def test_python_clients_with_no_address_and_no_local_cluster_say_how_to_start_one(tmp_path):
    code = "from sparrow_runtime import SparrowExecutor\nSparrowExecutor()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=clean_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "no `sparrow local` is running on this host: start one with `sparrow local`" in done.stderr
