"""`sparrow scheduler` and `sparrow node-monitor` as separate foreground processes, as on real hosts:
metrics endpoints serve the counters; SIGTERM drains a node monitor (its running task finishes and
is reported); SIGINT stops a scheduler; nothing is left running."""

from __future__ import annotations

import re
import signal
import subprocess
import time
import urllib.request

from .conftest import SPARROW, clean_env

LISTENING = r"listening on (\S+), metrics on (http://\S+)\n"


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(r"^(sparrow_\w+(?:\{[^}]*\})?) (\S+)$", text, re.MULTILINE)}


def wait_metric(url: str, name: str, at_least: float, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while scrape(url).get(name, 0) < at_least:
        assert time.monotonic() < deadline, f"{name} never reached {at_least}"
        time.sleep(0.05)


def test_services_serve_metrics_drain_on_sigterm_and_leave_nothing(running, tmp_path):
    env = clean_env(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("a cluster secret\n")
    secret.chmod(0o600)
    common = ["--secret-file", str(secret), "--metrics-port", "0"]
    scheduler = running(["scheduler", "--listen", "127.0.0.1:0", *common], env)
    address, scheduler_metrics = scheduler.wait_for(LISTENING).groups()
    node = running(["node-monitor", "--scheduler", address, "--slots", "2", "--id", "host-a", *common], env)
    node_metrics = node.wait_for(LISTENING).group(2)
    client = ["--scheduler", address, "--secret-file", str(secret)]

    done = subprocess.run([*SPARROW, "submit", *client, "--tasks", "3", "math:factorial"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
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
    slow = subprocess.Popen([*SPARROW, "submit", *client, "--", "sh", "-c", "sleep 1; echo finished"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
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
