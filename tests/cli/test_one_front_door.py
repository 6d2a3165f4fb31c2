"""`sparrow scheduler` and `sparrow node-monitor` are the one way to run a service: a node-monitor
setting given the way every `sparrow` command reads settings (here SPARROW_LABEL in the environment)
takes effect alike in a standalone node monitor, in `sparrow local` and in a LocalCluster."""

from __future__ import annotations

import json

import trio

from sparrow_runtime import Client, LocalCluster

from .conftest import clean_env, run_sparrow

LABEL = "from-the-environment"


def _labels(env, *args: str) -> list[list[str]]:
    done = run_sparrow("status", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    return [node["labels"] for node in json.loads(done.stdout)[0]["nodes"]]


def test_standalone_node_monitor_reads_the_setting(running, tmp_path):
    env = clean_env(tmp_path, SPARROW_SECRET="s", SPARROW_LABEL=LABEL)
    scheduler = running(["scheduler", "--insecure", "--listen", "127.0.0.1:0"], env)
    address = scheduler.wait_for(r"listening on (\S+)\n").group(1)
    running(["node-monitor", "--insecure", "--scheduler", address, "--slots", "1"], env).wait_for("listening on")
    assert _labels(env, "--scheduler", address) == [[LABEL]]


def test_sparrow_local_node_monitors_read_the_setting(running, tmp_path):
    env = clean_env(tmp_path, SPARROW_LABEL=LABEL)
    running(["local", "--node-monitors", "2", "--slots", "1"], env).wait_for("Press Ctrl-C to stop")
    assert _labels(env) == [[LABEL], [LABEL]]


def test_local_cluster_node_monitors_read_the_setting_and_report_metrics(monkeypatch):
    """The same for LocalCluster, whose services also report their metrics URLs in their ready lines."""
    monkeypatch.setenv("SPARROW_LABEL", LABEL)
    monkeypatch.setenv("SPARROW_METRICS_PORT", "0")

    async def labels(cluster: LocalCluster) -> list:
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            return [list(node.labels) for node in (await client.status()).nodes]

    with LocalCluster(schedulers=1, node_monitors=1, slots=1) as cluster:
        assert trio.run(labels, cluster) == [[LABEL]]
        assert set(cluster.metrics_urls) == {*cluster.schedulers, *cluster.node_monitors}
        assert all(url.startswith("http://127.0.0.1:") for url in cluster.metrics_urls.values())
