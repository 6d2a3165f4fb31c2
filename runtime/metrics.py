"""Prometheus metrics of the services (`--metrics-port`), with the optional prometheus-client package.

The metrics are read off each service's sans-I/O logic, in the service's own thread: the logic
is a subclass (`MeteredSchedulerLogic`, `MeteredNodeMonitorLogic`) that hands every batch of
messages in and out to a metrics object. Nothing here changes a decision. Names and meanings are
listed in docs/metrics.md.

- scheduler: jobs and tasks submitted, launched, finished, failed; probes sent; GetTask answers,
  empty ones; cancellations sent; registered node monitors and jobs in flight; histograms of the
  scheduling delay (job received to task handed to a node monitor) and the job response time (job
  received to its last outcome sent).
- node monitor: reservations received, GetTask sent and empty answers, tasks launched, finished
  and failed, reservations cancelled; its queue length, slots and busy slots.

Error handling: `require_prometheus` raises RuntimeError saying how to install the package.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable

from .messages import (
    CancelReservations,
    EnqueueReservations,
    GetTask,
    JobAccepted,
    JobRejected,
    NoTask,
    SubmitJob,
    TaskLaunch,
    TaskResult,
)
from .node_monitor_logic import NodeMonitorLogic
from .scheduler_logic import SchedulerLogic

logger = logging.getLogger("sparrow_runtime.metrics")

DELAY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
RESPONSE_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
INSTALL_HINT = "pip install 'sparrow-core[metrics]' (or: pip install prometheus-client)"


def require_prometheus():
    """The prometheus_client module, or RuntimeError saying how to install it."""
    try:
        import prometheus_client
    except ImportError:
        raise RuntimeError(f"--metrics-port needs the prometheus-client package: {INSTALL_HINT}") from None
    return prometheus_client


def serve_metrics(registry, host: str, port: int) -> tuple[str, int]:
    """Serve `registry` at http://host:port/metrics from a daemon thread; returns the bound address."""
    prom = require_prometheus()
    server, _thread = prom.start_http_server(port, addr=host, registry=registry)
    return host, server.server_port


def new_registry():
    """A registry with this process's CPU, memory and file descriptor metrics."""
    prom = require_prometheus()
    registry = prom.CollectorRegistry()
    prom.ProcessCollector(registry=registry)
    return registry


class SchedulerMetrics:
    """The scheduler's metrics, updated from the messages its logic takes and returns."""

    def __init__(self, registry, logic: SchedulerLogic) -> None:
        prom = require_prometheus()

        def counter(name: str, doc: str):
            return prom.Counter(name, doc, registry=registry)

        self.jobs_submitted = counter("sparrow_jobs_submitted", "Jobs received from clients")
        self.jobs_rejected = counter("sparrow_jobs_rejected", "Jobs refused as invalid")
        self.jobs_finished = counter("sparrow_jobs_finished", "Jobs whose every task has an outcome")
        self.tasks_submitted = counter("sparrow_tasks_submitted", "Tasks in the jobs received")
        self.tasks_launched = counter("sparrow_tasks_launched", "Tasks handed to a node monitor (TaskLaunch)")
        self.tasks_finished = counter("sparrow_tasks_finished", "Tasks that returned a value")
        self.tasks_failed = counter("sparrow_tasks_failed", "Tasks that raised or got no result of their own")
        self.probes = counter("sparrow_probes_sent", "Reservations placed on node monitors (batch sampling)")
        self.get_task = counter("sparrow_get_task", "GetTask requests answered")
        self.get_task_empty = counter("sparrow_get_task_empty", "GetTask requests answered with NoTask")
        self.cancellations = counter("sparrow_cancellations_sent", "CancelReservations messages sent")
        self.delay = prom.Histogram(
            "sparrow_scheduling_delay_seconds", "From a job's arrival to each task's launch",
            buckets=DELAY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.response = prom.Histogram(
            "sparrow_job_response_seconds", "From a job's arrival to its last task's outcome",
            buckets=RESPONSE_BUCKETS, registry=registry,
        )  # fmt: skip
        prom.Gauge("sparrow_node_monitors", "Node monitors registered and live", registry=registry).set_function(
            lambda: len(logic.nodes)
        )
        prom.Gauge("sparrow_jobs_in_flight", "Jobs with tasks still to finish", registry=registry).set_function(
            lambda: len(logic.jobs)
        )
        self._arrived: dict[int, float] = {}  # job id -> arrival time
        self._job_of: dict[tuple[Hashable, int], tuple[int, int]] = {}  # (client, ref) -> (job id, tasks left)

    def client_messages(self, client: Hashable, msgs: list, out: list) -> None:
        now = time.monotonic()
        submitted = {m.ref: m for m in msgs if type(m) is SubmitJob}
        for msg in submitted.values():
            self.jobs_submitted.inc()
            self.tasks_submitted.inc(len(msg.tasks))
        for peer, msg in out:
            if type(msg) is JobAccepted and peer == client and msg.ref in submitted:
                self._arrived[msg.job_id] = now
                self._job_of[(client, msg.ref)] = (msg.job_id, len(submitted[msg.ref].tasks))
            elif type(msg) is JobRejected:
                self.jobs_rejected.inc()
        self.outgoing(out, now)

    def node_messages(self, msgs: list, out: list) -> None:
        self.get_task.inc(sum(1 for m in msgs if type(m) is GetTask))
        self.outgoing(out, time.monotonic())

    def outgoing(self, out: list, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for peer, msg in out:
            kind = type(msg)
            if kind is TaskResult:
                (self.tasks_finished if msg.ok else self.tasks_failed).inc()
                self._outcome(peer, msg.ref, now)
            elif kind is EnqueueReservations:
                self.probes.inc(msg.count)
            elif kind is TaskLaunch:
                self.tasks_launched.inc()
                arrived = self._arrived.get(msg.job_id)
                if arrived is not None:
                    self.delay.observe(now - arrived)
            elif kind is NoTask:
                self.get_task_empty.inc()
            elif kind is CancelReservations:
                self.cancellations.inc()

    def _outcome(self, client: Hashable, ref: int, now: float) -> None:
        key = (client, ref)
        entry = self._job_of.get(key)
        if entry is None:
            return
        job_id, left = entry
        if left > 1:
            self._job_of[key] = (job_id, left - 1)
            return
        del self._job_of[key]
        arrived = self._arrived.pop(job_id, None)
        self.jobs_finished.inc()
        if arrived is not None:
            self.response.observe(now - arrived)

    def client_lost(self, client: Hashable, out: list) -> None:
        self.outgoing(out)
        for key in [k for k in self._job_of if k[0] == client]:  # its jobs are dropped unfinished
            job_id, _ = self._job_of.pop(key)
            self._arrived.pop(job_id, None)


class MeteredSchedulerLogic(SchedulerLogic):
    """SchedulerLogic that reports its traffic to a SchedulerMetrics (made from `registry`)."""

    def __init__(self, registry, **kwargs) -> None:
        super().__init__(**kwargs)
        self.metrics = SchedulerMetrics(registry, self)

    def on_client_messages(self, peer: Hashable, msgs: list) -> list:
        out = super().on_client_messages(peer, msgs)
        self.metrics.client_messages(peer, msgs, out)
        return out

    def on_client_lost(self, peer: Hashable) -> list:
        out = super().on_client_lost(peer)
        self.metrics.client_lost(peer, out)
        return out

    def on_node_messages(self, peer: Hashable, msgs: list) -> list:
        out = super().on_node_messages(peer, msgs)
        self.metrics.node_messages(msgs, out)
        return out

    def on_node_lost(self, peer: Hashable) -> list:
        out = super().on_node_lost(peer)
        self.metrics.outgoing(out)
        return out


# NodeMonitorLogic.stats key -> (metric name, help)
NODE_COUNTERS = {
    "reservations": ("sparrow_node_reservations", "Reservations received"),
    "get_task": ("sparrow_node_get_task", "GetTask requests sent"),
    "no_task": ("sparrow_node_get_task_empty", "NoTask answers received"),
    "launched": ("sparrow_node_tasks_launched", "Tasks launched on the executor"),
    "cancelled": ("sparrow_node_reservations_cancelled", "Reservations removed by CancelReservations"),
}


class MeteredNodeMonitorLogic(NodeMonitorLogic):
    """NodeMonitorLogic that keeps Prometheus metrics (in `registry`) of its counters and queue."""

    def __init__(self, registry, **kwargs) -> None:
        super().__init__(**kwargs)
        prom = require_prometheus()
        self._counters = {key: prom.Counter(name, doc, registry=registry) for key, (name, doc) in NODE_COUNTERS.items()}
        self._seen = {key: 0 for key in NODE_COUNTERS}
        self._finished = prom.Counter("sparrow_node_tasks_finished", "Tasks that returned a value", registry=registry)
        self._failed = prom.Counter(
            "sparrow_node_tasks_failed", "Tasks that raised or whose worker died", registry=registry
        )
        self._queue_length = prom.Gauge("sparrow_node_queue_length", "Reservations waiting", registry=registry)
        self._busy = prom.Gauge("sparrow_node_busy_slots", "Slots running or asking for a task", registry=registry)
        prom.Gauge("sparrow_node_slots", "Task slots", registry=registry).set(self.slots)

    def _update(self, out: list) -> list:
        stats = self.stats
        for key, counter in self._counters.items():
            value = stats[key]
            if value != self._seen[key]:
                counter.inc(value - self._seen[key])
                self._seen[key] = value
        self._queue_length.set(len(self.queue))
        self._busy.set(self.slots - self.free)
        return out

    def on_scheduler_messages(self, scheduler: Hashable, msgs: list) -> list:
        return self._update(super().on_scheduler_messages(scheduler, msgs))

    def on_scheduler_lost(self, scheduler: Hashable) -> list:
        return self._update(super().on_scheduler_lost(scheduler))

    def on_task_done(self, scheduler: Hashable, job_id: int, task: int, ok: bool, payload: bytes, error: str) -> list:
        (self._finished if ok else self._failed).inc()
        return self._update(super().on_task_done(scheduler, job_id, task, ok, payload, error))

    def drain(self) -> list:
        return self._update(super().drain())
