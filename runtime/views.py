"""Notebook views (`_repr_html_`) and one-line reprs of the runtime's user objects: a LocalCluster's
schedulers, node monitors, slots and dashboard; a Client's or SparrowExecutor's schedulers, connection,
jobs and tasks in flight and failovers; a JobHandle's progress. Each class's methods are one line calling these;
they read only the objects' public attributes (duck-typed: this room imports no service and no client)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# the viewed objects are duck-typed (this room imports none of their classes): read as Any
from sparrow_core._html import card, escape, link, plain, table

from .wire.address import Address, format_address


def _addresses(addresses: Iterable[str | Address]) -> list[str]:
    return [a if isinstance(a, str) else format_address(a) for a in addresses]


def cluster_repr(cluster: Any) -> str:
    if not cluster.schedulers:
        return plain("LocalCluster", state="not started", node_monitors=cluster.n_node_monitors, slots=cluster.slots)
    return plain(
        "LocalCluster",
        schedulers=",".join(cluster.schedulers),
        node_monitors=len(cluster.node_monitors),
        slots=cluster.slots * len(cluster.node_monitors),
        dashboard=cluster.dashboard_url,
    )


def cluster_html(cluster: Any) -> str:
    started = bool(cluster.schedulers)
    n_nodes = len(cluster.node_monitors) if started else cluster.n_node_monitors
    facts = [
        ("state", "running" if started else "not started (use it in a with block, or call start())"),
        ("schedulers", escape(", ".join(cluster.schedulers) or cluster.n_schedulers)),
        ("node monitors", f"{n_nodes} x {cluster.slots} slots = {n_nodes * cluster.slots} slots"),
        ("policy", escape(cluster.node_monitor.policy)),
        ("executor", escape(cluster.node_monitor.executor)),
    ]
    if cluster.dashboard_urls:
        facts.append(("dashboard", ", ".join(link(url) for url in cluster.dashboard_urls)))
    parts = []
    if started:
        rows = zip(cluster.node_ids, cluster.node_monitors, [cluster.slots] * n_nodes, cluster.node_monitor_pids)
        parts.append(table(["node monitor", "address", "slots", "pid"], rows))
    return card("Sparrow LocalCluster", facts, *parts)


def client_repr(client: Any) -> str:
    return plain(
        "Client",
        schedulers=",".join(_addresses(client.schedulers)),
        connected_to=client.connected_to,
        unfinished_tasks=client.unfinished,
        failovers=len(client.failovers),
    )


def client_html(client: Any, title: str = "Sparrow Client") -> str:
    facts = [
        ("schedulers", escape(", ".join(_addresses(client.schedulers)))),
        ("connected to", escape(client.connected_to or "none")),
        ("client id", escape(client.client_id)),
        ("jobs in flight", f"{client.unfinished_jobs:,}"),
        ("tasks in flight", f"{client.unfinished:,}"),
        ("failovers", str(len(client.failovers))),
    ]
    parts = []
    if client.failovers:
        rows = [(f.scheduler, f.reason, f.to or "none reachable", f.relaunched) for f in client.failovers[-5:]]
        parts.append(table(["lost", "why", "now on", "tasks relaunched"], rows))
    return card(title, facts, *parts)


def executor_repr(executor: Any) -> str:
    client = executor.client
    return plain(
        "SparrowExecutor",
        schedulers=",".join(_addresses(client.schedulers)),
        connected_to=client.connected_to,
        unfinished_tasks=client.unfinished,
        user=repr(executor.user),
    )


def executor_html(executor: Any) -> str:
    return client_html(executor.client, "Sparrow SparrowExecutor")


def _state(job: Any) -> str:
    if job.cancelled:
        return "cancelled"
    if job.done():
        return "done"
    return "placing" if job.job_id is None else "running"


def job_repr(job: Any) -> str:
    return plain("JobHandle", job_id=job.job_id, done=f"{job.n_done}/{job.n_tasks}", state=_state(job))


def job_html(job: Any) -> str:
    relaunched = sum(1 for a in job.attempts if a > 1)
    progress = f'<progress value="{job.n_done}" max="{job.n_tasks}"></progress> {job.n_done:,} / {job.n_tasks:,} tasks'
    facts = [
        ("job id", escape("not placed yet" if job.job_id is None else job.job_id)),
        ("state", _state(job)),
        ("progress", progress),
        ("tasks launched again", f"{relaunched:,} (retries: up to {job.retries} each)"),
    ]
    return card("Sparrow job", facts)
