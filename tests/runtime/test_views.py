"""Notebook views (runtime/views.py): a LocalCluster, SparrowExecutor, Client and JobHandle displayed in
Jupyter show their schedulers, node monitors and slots, dashboard link, connection, tasks in flight and a
job's progress; every value is escaped, and only http(s) URLs become links."""

from __future__ import annotations

import functools
import re
import time
from types import SimpleNamespace

import pytest
import trio

from sparrow_runtime import NodeMonitorConfig, views
from sparrow_runtime.client.core import Client
from sparrow_runtime.client.executor import SparrowExecutor
from sparrow_runtime.client.logic import Failover
from sparrow_runtime.services.local_cluster import LocalCluster


def cells(html: str) -> list[str]:
    return re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html)


def test_a_local_cluster_not_started_says_so():
    """Before start(), the view and the repr say the cluster is not started and what it will have."""
    cluster = LocalCluster(node_monitor=NodeMonitorConfig(executor="thread"), schedulers=1, node_monitors=3, slots=2)
    assert repr(cluster) == "<LocalCluster state=not started node_monitors=3 slots=2>"
    assert "not started" in cluster._repr_html_() and "3 x 2 slots = 6 slots" in cluster._repr_html_()


@pytest.mark.timeout(120)
def test_a_running_cluster_its_executor_and_a_client_job_show_their_facts():
    """A running LocalCluster lists its schedulers, each node monitor with address, slots and pid, and its
    dashboard link; an executor on it shows the scheduler it is connected to and no task in flight once
    its work is done; a Client's JobHandle shows its progress, done."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), schedulers=1, node_monitors=2, slots=2
    ) as cluster:
        html = cluster._repr_html_()
        (scheduler,) = cluster.schedulers
        assert scheduler in html and "2 x 2 slots = 4 slots" in html
        for node_id, address, pid in zip(cluster.node_ids, cluster.node_monitors, cluster.node_monitor_pids):
            assert [node_id, address, "2", str(pid)] in [cells(row) for row in html.split("<tr>")]
        assert f'<a href="{cluster.dashboard_url}" target="_blank"' in html
        assert repr(cluster) == (
            f"<LocalCluster schedulers={scheduler} node_monitors=2 slots=4 dashboard={cluster.dashboard_url}>"
        )

        with SparrowExecutor(cluster.schedulers, secret=cluster.secret, user="ann") as executor:
            assert sum(executor.map(abs, range(-5, 5))) == 25
            html = executor._repr_html_()
            assert "Sparrow SparrowExecutor" in html
            assert ["connected to", scheduler] in _pairs(html) and ["tasks in flight", "0"] in _pairs(html)
            assert repr(executor) == (
                f"<SparrowExecutor schedulers={scheduler} connected_to={scheduler} unfinished_tasks=0 user='ann'>"
            )

        async def job_views() -> tuple[str, str, str, str]:
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                sleeper = await client.submit_job([functools.partial(time.sleep, 0.3)])
                busy = client._repr_html_()  # the sleeper is in flight
                assert ["jobs in flight", "1"] in _pairs(busy) and ["tasks in flight", "1"] in _pairs(busy), busy
                await sleeper.wait()
                job = await client.submit_job([functools.partial(abs, -x) for x in range(3)])
                await job.wait()
                return job._repr_html_(), repr(job), client._repr_html_(), repr(client)

        job_html, job_text, client_html, client_text = trio.run(job_views)
    assert '<progress value="3" max="3"></progress> 3 / 3 tasks' in job_html and ["state", "done"] in _pairs(job_html)
    assert re.fullmatch(r"<JobHandle job_id=\d+ done=3/3 state=done>", job_text)
    assert ["connected to", scheduler] in _pairs(client_html) and ["failovers", "0"] in _pairs(client_html)
    assert ["jobs in flight", "0"] in _pairs(client_html)
    assert client_text.startswith(f"<Client schedulers={scheduler} connected_to={scheduler} unfinished_tasks=0")


def _pairs(html: str) -> list[list[str]]:
    return [cells(row) for row in html.split("<tr>")]


def test_views_escape_what_they_show_and_link_only_web_urls():
    """A client id, a failover's reason and addresses with markup are shown as text; a dashboard URL that is
    not http(s) is not made a link."""
    client = SimpleNamespace(
        schedulers=["127.0.0.1:1"],
        connected_to='<img src=x onerror="alert(1)">',
        client_id="<script>alert(1)</script>",
        unfinished=2,
        unfinished_jobs=1,
        failovers=[Failover("127.0.0.1:1", "closed <b>&</b>", 0.0, 1.0, "127.0.0.1:2", 5)],
    )
    html = views.client_html(client)
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "closed &lt;b&gt;&amp;&lt;/b&gt;" in html
    assert ["127.0.0.1:1", "closed &lt;b&gt;&amp;&lt;/b&gt;", "127.0.0.1:2", "5"] in _pairs(html)

    cluster = SimpleNamespace(
        schedulers=['127.0.0.1:1"><script>'],
        n_schedulers=1,
        node_monitors=[],
        n_node_monitors=0,
        slots=1,
        node_monitor=NodeMonitorConfig(policy="fifo", executor="thread"),
        dashboard_urls=["javascript:alert(1)"],
        node_ids=[],
        node_monitor_pids=[],
    )
    html = views.cluster_html(cluster)
    assert "<script>" not in html and "href" not in html and "javascript:alert(1)" in html
