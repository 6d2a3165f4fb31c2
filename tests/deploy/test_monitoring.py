"""The Grafana dashboard and the Prometheus alert rules under deploy/: every metric they name is one a
running local cluster exports (scraped), the dashboard covers what an operator watches, and promtool
accepts the rules and passes their unit tests (deploy/prometheus/sparrow-alerts.test.yml)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from sparrow_runtime.client.executor import SparrowExecutor
from sparrow_runtime.services.local_cluster import LocalCluster

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
    with LocalCluster(schedulers=1, node_monitors=1, slots=1, executor="thread") as cluster:
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
