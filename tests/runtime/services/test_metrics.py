"""The Prometheus metrics (metrics.py): the scheduler's counters come from SchedulerLogic.stats, its
timings and outcomes from the JobTimer (test_job_timer.py); the node monitor's counters from its
stats; the HTTP server serves /metrics (or says how to install prometheus-client) beside a dashboard."""

from __future__ import annotations

import logging
import sys
import urllib.error
import urllib.request

import prometheus_client
import pytest

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.http_server import serve_metrics
from sparrow_runtime.services.metrics import (
    DELAY_BUCKETS,
    BucketCounts,
    MeteredNodeMonitorLogic,
    MeteredSchedulerLogic,
    registry_if_available,
)
from sparrow_runtime.wire.messages import (
    CancelReservations,
    EnqueueReservations,
    GetTask,
    NoTask,
    Outcome,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    SubmitJob,
)


def kinds(out):
    return [type(msg).__name__ for _, msg in out]


def test_scheduler_metrics_count_the_protocol_traffic():
    """One job of two tasks, one extra GetTask, one failure: every metric says so."""
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredSchedulerLogic(registry, scheduler_id="s", seed=3, bind_idle=False)
    value = registry.get_sample_value
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 2)])
    logic.on_client_messages("c", [SubmitJob(1, [b"x", b"y"])])
    job_id = next(iter(logic.jobs))
    out = logic.on_node_messages("nm", [GetTask(job_id), GetTask(job_id), GetTask(job_id)])
    assert kinds(out).count("TaskToNode") == 2 and kinds(out).count("NoTask") == 1
    assert any(isinstance(msg, CancelReservations) for _, msg in out)
    logic.on_node_messages(
        "nm",
        [
            OutcomeToScheduler(job_id, 0, Outcome(True, b"", "")),
            OutcomeToScheduler(job_id, 1, Outcome(False, b"", "boom")),
        ],
    )
    expected = {
        "sparrow_jobs_submitted_total": 1,
        "sparrow_tasks_submitted_total": 2,
        "sparrow_probes_sent_total": 4,
        "sparrow_get_task_total": 3,
        "sparrow_get_task_empty_total": 1,
        "sparrow_tasks_launched_total": 2,
        "sparrow_cancellations_sent_total": 1,
        "sparrow_tasks_finished_total": 1,
        "sparrow_tasks_failed_total": 1,
        "sparrow_jobs_finished_total": 1,
        "sparrow_scheduling_delay_seconds_count": 2,
        "sparrow_job_response_seconds_count": 1,
        "sparrow_node_monitors": 1,
        "sparrow_jobs_in_flight": 0,
        "sparrow_jobs_rejected_total": 0,
    }
    assert {name: value(name) for name in expected} == expected


def test_tasks_bound_with_reservations_are_counted_on_both_sides():
    """bind_idle: a 1-task job on an idle node monitor goes unasked: the scheduler counts it bound with its
    reservations (and launched), the node monitor counts it bound unasked (and launched)."""
    registry = prometheus_client.CollectorRegistry()
    scheduler = MeteredSchedulerLogic(registry, scheduler_id="s", seed=3, bind_idle=True)
    scheduler.on_node_messages("nm", [RegisterNodeMonitor("a", 1)])
    out = scheduler.on_client_messages("c", [SubmitJob(1, [b"x"])])
    assert registry.get_sample_value("sparrow_tasks_bound_with_reservations_total") == 1
    assert registry.get_sample_value("sparrow_tasks_launched_total") == 1
    node_registry = prometheus_client.CollectorRegistry()
    node = MeteredNodeMonitorLogic(node_registry, config=NodeMonitorConfig(slots=1))
    node.on_scheduler_registered("s")
    node.on_scheduler_messages("s", [msg for peer, msg in out if peer == "nm"])
    assert node_registry.get_sample_value("sparrow_node_tasks_bound_unasked_total") == 1
    assert node_registry.get_sample_value("sparrow_node_tasks_launched_total") == 1


def test_scheduler_counters_are_the_logic_stats_themselves():
    """The counters are read from SchedulerLogic.stats at scrape time: one source, not a recount."""
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredSchedulerLogic(registry, scheduler_id="s", seed=3, bind_idle=False)
    table = {
        "probes": "sparrow_probes_sent_total",
        "launched": "sparrow_tasks_launched_total",
        "no_task": "sparrow_get_task_empty_total",
        "cancel_messages": "sparrow_cancellations_sent_total",
        "get_task": "sparrow_get_task_total",
        "tasks": "sparrow_tasks_submitted_total",
    }
    for i, key in enumerate(table, start=1):
        logic.stats[key] += 10 * i
    assert {key: registry.get_sample_value(name) for key, name in table.items()} == {
        key: 10 * i for i, key in enumerate(table, start=1)
    }


def test_a_rejected_job_counts_as_submitted_and_rejected_and_its_tasks_do_not():
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredSchedulerLogic(registry, scheduler_id="s", seed=3, bind_idle=False)
    out = logic.on_client_messages("c", [SubmitJob(1, [])])
    assert kinds(out) == ["JobRejected"]
    value = registry.get_sample_value
    assert (value("sparrow_jobs_submitted_total"), value("sparrow_jobs_rejected_total")) == (1, 1)
    assert value("sparrow_tasks_submitted_total") == 0


def test_node_monitor_metrics_follow_its_queue_and_slots():
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredNodeMonitorLogic(registry, config=NodeMonitorConfig(slots=2))
    value = registry.get_sample_value
    logic.on_scheduler_registered("s")
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "", 0, 5)])
    assert (value("sparrow_node_queue_length"), value("sparrow_node_busy_slots")) == (3, 2)
    logic.on_scheduler_messages("s", [NoTask(1), CancelReservations(1)])
    assert value("sparrow_node_reservations_total") == 5 and value("sparrow_node_get_task_empty_total") == 1
    assert value("sparrow_node_reservations_cancelled_total") == 3  # removed before the freed slot is refilled
    assert (value("sparrow_node_queue_length"), value("sparrow_node_busy_slots")) == (0, 1)
    logic.on_task_done("s", 1, 0, Outcome(False, b"", "died"))
    assert value("sparrow_node_tasks_failed_total") == 1 and value("sparrow_node_slots") == 2
    assert value("sparrow_node_get_task_total") == logic.stats["get_task"] == 2  # the NoTask was not re-asked


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_http_server_serves_metrics_and_the_pages_beside_them():
    registry = prometheus_client.CollectorRegistry()
    prometheus_client.Counter("sparrow_example", "an example", registry=registry).inc(3)

    def pages(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"page {environ['PATH_INFO']}".encode()]

    host, port = serve_metrics(registry, "127.0.0.1", 0, pages)
    status, text = get(f"http://{host}:{port}/metrics")
    assert status == 200 and "sparrow_example_total 3.0" in text
    assert get(f"http://{host}:{port}/") == (200, "page /")
    host, port = serve_metrics(registry, "127.0.0.1", 0)  # no pages: metrics everywhere, as before
    assert "sparrow_example_total 3.0" in get(f"http://{host}:{port}/")[1]


def test_without_prometheus_client_the_metrics_path_says_how_to_install_it(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails as if not installed
    with caplog.at_level(logging.WARNING, logger="sparrow_runtime.services.metrics"):
        assert registry_if_available() is None
    assert "pip install 'sparrow-core[metrics]'" in caplog.text

    def dashboard(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"dashboard"]

    host, port = serve_metrics(None, "127.0.0.1", 0, dashboard)
    status, text = get(f"http://{host}:{port}/metrics")
    assert status == 503 and "pip install 'sparrow-core[metrics]'" in text
    assert get(f"http://{host}:{port}/") == (200, "dashboard")


def test_metered_node_monitor_still_needs_prometheus_client(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(RuntimeError, match="prometheus-client"):
        MeteredNodeMonitorLogic(object(), config=NodeMonitorConfig(slots=1))


def test_bucket_counts_expose_what_prometheus_clients_histogram_would():
    """Same values into BucketCounts and into prometheus_client.Histogram (the reference): the same
    buckets (a value on a bound counts in it), count and sum."""
    values = [0.0, 0.0005, 0.0007, 0.001, 0.0031, 0.5, 9.99, 10.0, 10.5, 1e6]
    ours, reference = prometheus_client.CollectorRegistry(), prometheus_client.CollectorRegistry()
    counts = BucketCounts("delay_seconds", "a delay", DELAY_BUCKETS)
    ours.register(counts)
    counts.observe(values[:4])
    counts.observe(values[4:])
    histogram = prometheus_client.Histogram("delay_seconds", "a delay", buckets=DELAY_BUCKETS, registry=reference)
    for value in values:
        histogram.observe(value)

    def samples(registry):
        return sorted(
            (s.name, tuple(sorted(s.labels.items())), s.value)
            for metric in registry.collect()
            for s in metric.samples
            if not s.name.endswith("_created")
        )

    assert samples(ours) == samples(reference)
    assert ours.get_sample_value("delay_seconds_bucket", {"le": "0.001"}) == 4
