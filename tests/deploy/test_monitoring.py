"""The Grafana dashboard and the Prometheus alert rules under deploy/: every metric they name is one a
running local cluster exports (scraped), the dashboard covers what an operator watches, promtool
accepts the rules and passes their unit tests (deploy/prometheus/sparrow-alerts.test.yml), and the
scrape config (deploy/prometheus/prometheus.yml) is valid and lets a real Prometheus scrape a TLS
service's HTTPS metrics with a monitor certificate."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from sparrow_runtime import NodeMonitorConfig
from sparrow_runtime.client.executor import SparrowExecutor
from sparrow_runtime.services.local_cluster import LocalCluster

from ..process_tree import stop

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "sparrow.json"
ALERTS = ROOT / "deploy" / "prometheus" / "sparrow-alerts.yml"
ALERT_TESTS = ROOT / "deploy" / "prometheus" / "sparrow-alerts.test.yml"
METRIC = re.compile(r"\b((?:sparrow|process)_[a-z0-9_]+)\b")


def dashboard_queries() -> list[str]:
    return [target["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]]


def alert_queries() -> list[str]:
    """The `expr` of each rule (multi-line ones included), read from the YAML text."""
    return [block or line for block, line in re.findall(r"expr: (?:\|\n((?:\s{10}.*\n)+)|(.+))", ALERTS.read_text())]


def scrape(url: str) -> set[str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {re.split(r"[{ ]", line, maxsplit=1)[0] for line in text.splitlines() if line and not line.startswith("#")}


def square(x: int) -> int:
    return x * x


@pytest.mark.timeout(120)
def test_every_metric_the_dashboard_and_alerts_name_is_exported_by_a_running_cluster(monkeypatch):
    """A scheduler's and a node monitor's /metrics, after some tasks ran, have every series the files use."""
    monkeypatch.setenv("SPARROW_METRICS_PORT", "0")
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), schedulers=1, node_monitors=1, slots=1
    ) as cluster:
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor:
            assert list(executor.map(square, range(10))) == [x * x for x in range(10)]
        assert set(cluster.metrics_urls) == {*cluster.schedulers, *cluster.node_monitors}
        exported = set().union(*(scrape(url) for url in cluster.metrics_urls.values()))
    named = {name for query in dashboard_queries() + alert_queries() for name in METRIC.findall(query)}
    assert len(named) >= 10, named
    assert not named - exported, f"named but not exported: {sorted(named - exported)}"


def test_the_dashboard_shows_what_an_operator_watches():
    """Throughput, delay and response percentiles, slots busy, queues per node monitor, node monitors lost,
    failovers and rejections each have a panel whose queries use the metric that measures it."""
    panels = {
        panel["title"]: " ".join(t["expr"] for t in panel["targets"])
        for panel in json.loads(DASHBOARD.read_text())["panels"]
    }
    wanted = {
        "Throughput": "sparrow_tasks_finished_total",
        "Scheduling delay (arrival to launch)": "sparrow_scheduling_delay_seconds_bucket",
        "Job response time": "sparrow_job_response_seconds_bucket",
        "Slots busy per node monitor": "sparrow_node_busy_slots",
        "Queue length per node monitor": "sparrow_node_queue_length",
        "Node monitors: registered and lost": "sparrow_node_monitors_lost_total",
        "Failovers: schedulers down or restarted": "up{",
        "Rejections and wasted round trips": "sparrow_jobs_rejected_total",
    }
    for title, metric in wanted.items():
        assert metric in panels.get(title, ""), title
    for quantile in ("0.5", "0.95", "0.99"):
        assert (
            f"histogram_quantile({quantile}, sum by (le) (rate(sparrow_scheduling_delay"
            in panels["Scheduling delay (arrival to launch)"]
        )
    assert "{{instance}}" in json.dumps(json.loads(DASHBOARD.read_text())["panels"])  # per node monitor


@pytest.fixture
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("no promtool: CI must install it (apt-get install prometheus)")
        pytest.skip("no promtool on this machine (apt-get install prometheus)")
    return path


def test_promtool_checks_the_alert_rules_and_passes_their_unit_tests(promtool):
    """`promtool check rules` accepts every rule, and the unit tests see each alert fire on its scenario."""
    check = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 6 rules found" in check.stdout
    test = subprocess.run(
        [promtool, "test", "rules", str(ALERT_TESTS)], capture_output=True, text=True, timeout=60, cwd=ALERTS.parent
    )
    assert test.returncode == 0, test.stdout + test.stderr
    tested = set(re.findall(r"alertname: (\w+)", ALERT_TESTS.read_text()))
    assert tested == set(re.findall(r"alert: (\w+)", ALERTS.read_text()))  # every alert has a test


SCRAPE_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
PROMETHEUS_FILES = "/etc/prometheus/sparrow/"  # where the scrape config expects the CA and its certificate


def _prometheus_folder(tmp_path: Path) -> Path:
    """tmp_path with the cluster's CA, a scheduler's, Prometheus's (monitor) and alice's (client)
    certificates, the alert rules, and deploy's scrape config reading its files from there."""
    from sparrow_runtime.wire import certs

    certs.init_ca(tmp_path)
    for name, role in (("sched", "scheduler"), ("prometheus", "monitor"), ("alice", "client")):
        certs.issue(tmp_path, name, role)
    shutil.copy(ALERTS, tmp_path / ALERTS.name)
    (tmp_path / "prometheus.yml").write_text(SCRAPE_CONFIG.read_text().replace(PROMETHEUS_FILES, f"{tmp_path}/"))
    return tmp_path


def test_promtool_accepts_the_scrape_config_with_its_files_in_place(promtool, tmp_path):
    """deploy/prometheus/prometheus.yml (HTTPS, a monitor certificate) is a valid Prometheus config once
    its CA, certificate and key exist, and it loads the alert rules."""
    folder = _prometheus_folder(tmp_path)
    check = subprocess.run(
        [promtool, "check", "config", str(folder / "prometheus.yml")], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 6 rules found" in check.stdout + check.stderr


@pytest.mark.timeout(120)
def test_prometheus_scrapes_a_tls_scheduler_with_the_monitor_certificate_and_not_with_a_clients(promtool, tmp_path):
    """A real Prometheus with deploy's sparrow-scheduler job (HTTPS, the monitor certificate; pointed at a
    scheduler's metrics server on TLS, by IP with server_name) scrapes it: up. The same job with alice's
    client certificate instead: down, with the server's 403."""
    import yaml

    from sparrow_runtime.services.http_server import serve_metrics
    from sparrow_runtime.services.metrics import new_registry
    from sparrow_runtime.wire.tls import TLS

    pytest.importorskip("prometheus_client")
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        if os.environ.get("CI"):
            pytest.fail("no prometheus: CI must install it (apt-get install prometheus)")
        pytest.skip("no prometheus server on this machine (apt-get install prometheus)")
    folder = _prometheus_folder(tmp_path)
    host, port = serve_metrics(
        new_registry(), "127.0.0.1", 0, tls=TLS(folder / "ca.pem", folder / "sched.pem", folder / "sched-key.pem")
    )
    config = yaml.safe_load((folder / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "sparrow-scheduler")
    job["static_configs"] = [{"targets": [f"{host}:{port}"]}]
    job["tls_config"]["server_name"] = "sched"  # scraped by IP: the certificate's name, as the file says
    job["scrape_interval"] = "1s"
    as_client = json.loads(json.dumps(job))
    as_client["job_name"] = "as-a-client"
    as_client["tls_config"]["cert_file"] = str(folder / "alice.pem")
    as_client["tls_config"]["key_file"] = str(folder / "alice-key.pem")
    config["scrape_configs"] = [job, as_client]
    (folder / "scrape.yml").write_text(yaml.safe_dump(config))
    web = _free_port()
    args = [f"--config.file={folder / 'scrape.yml'}", f"--storage.tsdb.path={folder / 'data'}"]
    args += [f"--web.listen-address=127.0.0.1:{web}", "--log.level=error"]
    process = subprocess.Popen(
        [prometheus, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        health = _wait_for_targets(f"http://127.0.0.1:{web}/api/v1/targets", {"sparrow-scheduler", "as-a-client"})
    finally:
        stop(process, 20)
        process.stderr.close()
    assert health["sparrow-scheduler"] == ("up", ""), health
    state, error = health["as-a-client"]
    assert state == "down" and "403" in error, health


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_targets(url: str, jobs: set[str], timeout: float = 60.0) -> dict[str, tuple[str, str]]:
    """(health, last error) of each of `jobs`' targets, once each was scraped at least once."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                targets = json.loads(response.read())["data"]["activeTargets"]
            found = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in targets}
            if set(found) >= jobs and all(found[j][0] != "unknown" for j in jobs):
                return found
        except OSError:
            pass  # not listening yet
        assert time.monotonic() < deadline, f"Prometheus did not scrape {sorted(jobs)} within {timeout} s"
        time.sleep(0.25)
