"""`sparrow scheduler` and `sparrow node-monitor` as separate foreground processes, as on real hosts:
metrics endpoints serve the counters; SIGTERM drains a node monitor (its running task finishes and
is reported); SIGINT stops a scheduler; the first signal stops a node monitor that cannot register;
its workers die with it however it dies; tasks never see the secret; nothing is left running."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ..process_tree import descendants, survivors
from .conftest import SPARROW, clean_env

LISTENING = r"listening on (\S+), metrics on (http://[^\s,]+)"


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(r"^(sparrow_\w+(?:\{[^}]*\})?) (\S+)$", text, re.MULTILINE)}


def wait_metric(url: str, name: str, at_least: float, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while scrape(url).get(name, 0) < at_least:
        assert time.monotonic() < deadline, f"{name} never reached {at_least}"
        time.sleep(0.05)


def write_secret(path: Path, secret: str = "a cluster secret") -> Path:
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return path


def submit(*args: str, env: dict[str, str]) -> subprocess.Popen:
    """`sparrow submit ARGS` in the background, its output as text."""
    return subprocess.Popen(
        [*SPARROW, "submit", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_services_serve_metrics_drain_on_sigterm_and_leave_nothing(running, tmp_path):
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    common = ["--secret-file", str(secret), "--metrics-port", "0"]
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", *common], env)
    address, scheduler_metrics = scheduler.wait_for(LISTENING).groups()
    node = running(
        ["node-monitor", "--insecure", "--scheduler", address, "--slots", "2", "--id", "host-a", *common], env
    )
    node_metrics = node.wait_for(LISTENING).group(2)
    client = ["--scheduler", address, "--secret-file", str(secret)]

    done = subprocess.run(
        [*SPARROW, "submit", *client, "--tasks", "3", "math:factorial"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = scrape(scheduler_metrics)
    assert seen["sparrow_jobs_submitted_total"] == 1 and seen["sparrow_jobs_finished_total"] == 1
    assert seen["sparrow_tasks_submitted_total"] == 3 and seen["sparrow_tasks_finished_total"] == 3
    assert seen["sparrow_tasks_launched_total"] == 3 and seen["sparrow_tasks_failed_total"] == 0
    assert seen["sparrow_probes_sent_total"] == 6  # batch sampling, probe ratio 2
    assert seen["sparrow_scheduling_delay_seconds_count"] == 3 and seen["sparrow_job_response_seconds_count"] == 1
    assert seen["sparrow_node_monitors"] == 1
    assert scrape(node_metrics)["sparrow_node_tasks_finished_total"] == 3
    assert scrape(node_metrics)["sparrow_node_slots"] == 2

    # SIGTERM while a task runs: the node monitor lets it finish and report before it stops
    slow = subprocess.Popen(
        [*SPARROW, "submit", *client, "--", "sh", "-c", "sleep 1; echo finished"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_metric(node_metrics, "sparrow_node_tasks_launched_total", 4)
        assert node.stop(signal.SIGTERM) == 0
        out, err = slow.communicate(timeout=30)
    finally:
        slow.kill()
        slow.communicate()
    assert slow.returncode == 0, err
    assert out == "[0] finished\n"
    assert node.leftover == []
    assert "SIGTERM received: stopping" in node.stderr()

    assert scheduler.stop(signal.SIGINT) == 0
    assert scheduler.leftover == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("why", ["unreachable", "wrong secret"])
def test_node_monitor_still_trying_to_register_stops_on_the_first_signal(running, tmp_path, sig, why):
    """No scheduler to register with, or the wrong secret: it retries, and one signal stops it, exit 0."""
    env = clean_env(tmp_path)
    if why == "unreachable":
        address, logged = "127.0.0.1:1", "cannot reach 127.0.0.1:1"
    else:
        scheduler = running(
            ["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(write_secret(tmp_path / "s"))],
            env,
        )
        address, logged = scheduler.wait_for(r"listening on (\S+)\n").group(1), "authentication failed"
    other = write_secret(tmp_path / "other", "another secret")
    node = running(
        ["node-monitor", "--insecure", "--scheduler", address, "--slots", "2", "--secret-file", str(other)], env
    )
    node.wait_for_stderr(logged)
    assert node.stop(sig, timeout=10) == 0  # today: ignored until SIGKILL
    assert node.leftover == []
    assert f"{sig.name} received: stopping" in node.stderr()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_node_monitor_waiting_for_one_of_its_schedulers_serves_its_metrics_meanwhile(running, tmp_path):
    """Registered with one scheduler of two (the other not up yet), a node monitor already serves its
    metrics (the URL logged), `sparrow_node_schedulers` says 1, and no ready line is printed; once
    the second scheduler is up, the ready line names the same URL and the gauge says 2."""
    env = clean_env(tmp_path)
    secret = ["--secret-file", str(write_secret(tmp_path / "secret"))]
    first = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", *secret], env)
    up = first.wait_for(r"listening on (\S+)\n").group(1)
    later = f"127.0.0.1:{free_port()}"
    command = ["node-monitor", "--insecure", "--scheduler", up, "--scheduler", later, "--metrics-port", "0", *secret]
    node = running([*command, "--slots", "1"], env)
    node.wait_for_stderr("serving metrics on ")
    url = re.search(r"serving metrics on (http://\S+)", node.stderr()).group(1) + "/metrics"
    wait_metric(url, "sparrow_node_schedulers", 1)
    assert scrape(url)["sparrow_node_schedulers"] == 1
    assert select.select([node.process.stdout], [], [], 0.5)[0] == []  # nothing on stdout: no ready line yet
    second = running(["scheduler", "--insecure", "--listen", later, *secret], env)
    second.wait_for(r"listening on (\S+)\n")
    assert node.wait_for(LISTENING).group(2) == url
    assert scrape(url)["sparrow_node_schedulers"] == 2


def test_sigkill_of_a_node_monitor_running_tasks_leaves_no_worker_or_task_process(running, tmp_path):
    """Its executor workers, their fork server, and the programs their tasks run die with it instead of
    running on."""
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret)], env)
    address = scheduler.wait_for(r"listening on (\S+)\n").group(1)
    node = running(
        ["node-monitor", "--insecure", "--scheduler", address, "--slots", "2", "--secret-file", str(secret)], env
    )
    node.wait_for(r"listening on")
    job = submit("--scheduler", address, "--secret-file", str(secret), "--tasks", "2", "--", "sleep", "60", env=env)
    try:
        deadline = time.monotonic() + 30
        while _count_sleepers(tree := descendants(node.process.pid)) < 2:
            assert time.monotonic() < deadline, "the two tasks never started"
            time.sleep(0.05)
        assert len(tree) == 5  # the fork server, 2 workers it forked, each running `sleep 60`
        node.process.kill()
        assert survivors(tree, timeout=10) == []
        _, err = job.communicate(timeout=30)
        assert job.returncode == 1 and "2 failed" in err  # the scheduler reports both lost
    finally:
        job.kill()
        job.communicate()


def _count_sleepers(pids: set[int]) -> int:
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            count += Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"60"]
    return count


def test_ctrl_c_in_the_node_monitors_terminal_drains_without_interrupting_its_tasks(running, tmp_path):
    """SIGINT to the node monitor's whole process group, as a terminal sends it: the running task,
    in a process group of its own, is not interrupted; it finishes and is reported."""
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    scheduler = running(
        ["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret), "--metrics-port", "0"], env
    )
    address = scheduler.wait_for(LISTENING).group(1)
    node = running(
        [
            "node-monitor",
            "--insecure",
            "--scheduler",
            address,
            "--slots",
            "1",
            "--secret-file",
            str(secret),
            "--metrics-port",
            "0",
        ],
        env,
    )
    node_metrics = node.wait_for(LISTENING).group(2)
    job = submit(
        "--scheduler", address, "--secret-file", str(secret), "--", "sh", "-c", "sleep 1; echo finished", env=env
    )
    try:
        wait_metric(node_metrics, "sparrow_node_tasks_launched_total", 1)
        os.killpg(node.process.pid, signal.SIGINT)
        out, err = job.communicate(timeout=30)
    finally:
        job.kill()
        job.communicate()
    assert (job.returncode, out) == (0, "[0] finished\n"), err
    assert node.process.wait(timeout=20) == 0  # drained, then stopped by itself
    node.stop()
    assert node.leftover == []


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_tasks_cannot_read_the_secret_the_node_monitor_was_given_in_its_environment(running, tmp_path, executor):
    """SPARROW_SECRET given to the services: a shell task finds no SPARROW_SECRET nor SPARROW_SECRET_FILE."""
    env = clean_env(tmp_path, SPARROW_SECRET="the cluster secret")
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0"], env)
    address = scheduler.wait_for(r"listening on (\S+)\n").group(1)
    node = running(["node-monitor", "--insecure", "--scheduler", address, "--slots", "1", "--executor", executor], env)
    node.wait_for(r"listening on")
    show = 'echo "[${SPARROW_SECRET-unset}] [${SPARROW_SECRET_FILE-unset}]"'
    job = submit("--scheduler", address, "--", "sh", "-c", show, env=env)
    out, err = job.communicate(timeout=60)
    assert (job.returncode, out) == (0, "[0] [unset] [unset]\n"), err


def test_a_second_node_monitor_with_a_live_id_exits_with_a_one_line_reason(running, tmp_path):
    """Clones that share an id: the second is refused by the scheduler and stops, saying which id and
    how to fix it; the first keeps serving."""
    env = clean_env(tmp_path)
    secret = write_secret(tmp_path / "secret")
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0", "--secret-file", str(secret)], env)
    address = scheduler.wait_for(r"listening on (\S+)\n").group(1)
    args = [
        "node-monitor",
        "--insecure",
        "--scheduler",
        address,
        "--secret-file",
        str(secret),
        "--id",
        "box",
        "--slots",
        "1",
    ]
    first = running(args, env)
    first.wait_for("listening on")
    second = running(args, env)
    assert second.process.wait(timeout=30) == 1
    lines = second.stderr().strip().splitlines()
    assert lines[-1].startswith("sparrow node-monitor: error: ") and "'box' is already registered" in lines[-1]
    assert "--id" in lines[-1]
    assert first.process.poll() is None


def test_services_and_submit_speak_over_unix_sockets(running, tmp_path):
    """`--listen unix:PATH` for the scheduler and the node monitor, `--scheduler unix:PATH` to dial it: the
    ready lines give the socket addresses, metrics stay on loopback TCP, and a submitted command runs."""
    env = clean_env(tmp_path, SPARROW_SECRET="the cluster secret", SPARROW_INSECURE="1")
    path = tmp_path / "scheduler.sock"
    scheduler = running(["scheduler", "--listen", f"unix:{path}", "--metrics-port", "0"], env)
    address, metrics = scheduler.wait_for(LISTENING).groups()
    assert address == f"unix:{path}" and metrics.startswith("http://127.0.0.1:")
    node = running(["node-monitor", "--scheduler", address, "--listen", f"unix:{tmp_path / 'nm.sock'}"], env)
    assert node.wait_for(r"listening on (\S+)\n").group(1) == f"unix:{tmp_path / 'nm.sock'}"
    job = submit("--scheduler", address, "--", "echo", "over a unix socket", env=env)
    out, err = job.communicate(timeout=60)
    assert (job.returncode, out) == (0, "[0] over a unix socket\n"), err


def test_a_tls_scheduler_serves_metrics_over_https_to_a_monitor_and_plain_http_only_when_asked(running, tmp_path):
    """With TLS files, the ready line's metrics URL is https:// and a monitor certificate reads it (a
    request without one fails); with --metrics-insecure it is plain http:// again."""
    from sparrow_runtime.wire import certs

    folder = tmp_path / "ca"
    certs.init_ca(folder)
    certs.issue(folder, "sched", "scheduler")
    certs.issue(folder, "prom", "monitor")
    tls = ["--tls-ca", str(folder / "ca.pem"), "--tls-cert", str(folder / "sched.pem")]
    tls += ["--tls-key", str(folder / "sched-key.pem"), "--listen", "127.0.0.1:0", "--metrics-port", "0"]
    env = clean_env(tmp_path)
    secure = running(["scheduler", *tls], env)
    url = secure.wait_for(r"metrics on (https://[^\s,]+)").group(1)
    ctx = ssl.create_default_context(cafile=str(folder / "ca.pem"))
    ctx.check_hostname = False
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):  # no client certificate
        urllib.request.urlopen(url, timeout=10, context=ctx)
    ctx.load_cert_chain(str(folder / "prom.pem"), str(folder / "prom-key.pem"))
    with urllib.request.urlopen(url, timeout=10, context=ctx) as response:
        assert "sparrow_jobs_submitted_total" in response.read().decode()
    plain = running(["scheduler", *tls, "--metrics-insecure"], env)
    url = plain.wait_for(LISTENING).group(2)
    assert url.startswith("http://127.0.0.1:") and "sparrow_jobs_submitted_total" in scrape(url)


def test_a_tls_node_monitor_without_a_task_user_says_once_what_a_task_can_then_do(running, tmp_path):
    """On TLS without --task-user, tasks run as the node monitor's user and can read its key: the node
    monitor says so in one warning line at start, naming the key; the scheduler has nothing to say."""
    from sparrow_runtime.wire import certs

    folder = tmp_path / "ca"
    certs.init_ca(folder)
    certs.issue(folder, "sched", "scheduler")
    certs.issue(folder, "nm", "node-monitor")
    env = clean_env(tmp_path)

    def tls(name: str) -> list[str]:
        return ["--tls-ca", str(folder / "ca.pem"), "--tls-cert", str(folder / f"{name}.pem"),
                "--tls-key", str(folder / f"{name}-key.pem"), "--listen", "127.0.0.1:0"]  # fmt: skip

    scheduler = running(["scheduler", *tls("sched")], env)
    address = scheduler.wait_for(r"listening on ([^\s,]+)").group(1)
    node = running(["node-monitor", "--scheduler", address, "--executor", "thread", *tls("nm")], env)
    node.wait_for(r"listening on ([^\s,]+)")
    warnings = [line for line in node.stderr().splitlines() if "without --task-user" in line]
    assert len(warnings) == 1 and str(folder / "nm-key.pem") in warnings[0]
    assert "take other users' tasks" in warnings[0]
    assert "without --task-user" not in scheduler.stderr()
