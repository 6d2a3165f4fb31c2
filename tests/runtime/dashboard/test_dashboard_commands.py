"""The dashboard from the commands a user runs: `sparrow local` prints its URL, and
`sparrow scheduler --metrics-port` serves it beside the metrics, on the scheduler's host."""

from __future__ import annotations

import json
import signal
import time
import urllib.request

from ...cli.conftest import Running, clean_env

DASHBOARD_LINE = r"dashboard: +(http://\S+/)\n"


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def wait_for_nodes(url: str, count: int, timeout: float = 30.0) -> dict:
    """The dashboard's data once it lists `count` node monitors up (it samples once a second)."""
    deadline = time.monotonic() + timeout
    while True:
        data = get_json(url + "dashboard.json")
        if sum(1 for n in data["nodes"] if n["state"] == "up") == count:
            return data
        assert time.monotonic() < deadline, data
        time.sleep(0.2)


def test_sparrow_local_prints_its_dashboard_url_on_loopback(tmp_path):
    local = Running(["local", "--node-monitors", "2", "--slots", "1", "--executor", "thread"], clean_env(tmp_path))
    try:
        url = local.wait_for(DASHBOARD_LINE).group(1)
        local.wait_for("Press Ctrl-C to stop")
        assert url.startswith("http://127.0.0.1:")
        data = wait_for_nodes(url, 2)
        assert data["scheduler_id"] == "scheduler-0" and sorted(n["node_id"] for n in data["nodes"]) == ["nm-0", "nm-1"]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b"<title>Sparrow scheduler scheduler-0</title>" in response.read()
    finally:
        assert local.stop(signal.SIGINT) == 0
        local.close()
    assert local.leftover == []


def test_sparrow_scheduler_serves_its_dashboard_beside_the_metrics(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a cluster secret\n")
    secret.chmod(0o600)
    args = ["--listen", "127.0.0.1:0", "--secret-file", str(secret), "--metrics-port", "0", "--id", "s-1"]
    scheduler = Running(["scheduler", "--insecure", *args], clean_env(tmp_path))
    try:
        found = scheduler.wait_for(r"metrics on (http://[^\s,]+)/metrics, dashboard on (http://\S+/)\n")
        metrics, dashboard = found.groups()
        assert dashboard == metrics + "/"
        assert get_json(dashboard + "dashboard.json")["scheduler_id"] == "s-1"
        with urllib.request.urlopen(metrics + "/metrics", timeout=10) as response:
            assert b"sparrow_probes_sent_total 0.0" in response.read()
    finally:
        assert scheduler.stop(signal.SIGINT) == 0
        scheduler.close()
