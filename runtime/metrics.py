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

import bisect
import itertools
import logging
import socket
import socketserver
import threading
import wsgiref.simple_server
from collections import Counter
from collections.abc import Callable, Hashable

from .messages import JobAccepted, RegisterNodeMonitor, TaskLaunch, TaskResult
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


def serve_metrics(registry, host: str, port: int, pages=None) -> tuple[str, int]:
    """Serve HTTP on host:port from daemon threads; returns the bound address (port 0: any free one).

    `/metrics`: the Prometheus metrics of `registry` (None: a 503 saying how to install
    prometheus-client). Every other path: the WSGI app `pages` (the scheduler's dashboard), or, without
    one, the metrics again, as prometheus-client's own server does.
    """
    metrics = _no_prometheus if registry is None else require_prometheus().make_wsgi_app(registry)
    other = pages if pages is not None else metrics

    def app(environ, start_response):
        return (metrics if environ.get("PATH_INFO") == "/metrics" else other)(environ, start_response)

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    server_class = type("HTTPServer", (_ThreadingWSGIServer,), {"address_family": family})
    server = wsgiref.simple_server.make_server(host, port, app, server_class, _QuietHandler)
    threading.Thread(target=server.serve_forever, name="sparrow-http", daemon=True).start()
    return host, server.server_port


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True  # a slow client never holds up the service's exit


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        """No line on standard error per request (a dashboard polls every second)."""


def _no_prometheus(environ, start_response):
    body = f"Prometheus metrics need the prometheus-client package: {INSTALL_HINT}\n".encode()
    start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"),
                                               ("Content-Length", str(len(body)))])  # fmt: skip
    return [body]


def new_registry():
    """A registry with this process's CPU, memory and file descriptor metrics."""
    prom = require_prometheus()
    registry = prom.CollectorRegistry()
    prom.ProcessCollector(registry=registry)
    return registry


def registry_if_available():
    """`new_registry()`, or None with a warning when prometheus-client is missing: a scheduler's HTTP
    port then serves its dashboard alone."""
    try:
        return new_registry()
    except RuntimeError:
        logger.warning("serving the dashboard without Prometheus metrics: %s", INSTALL_HINT)
        return None


class SchedulerObserver:
    """What a scheduler's traffic tells beyond its counters, as events; override the ones you need.
    Called in the scheduler's own thread, from inside its logic, once per batch of messages: keep each
    call short."""

    def traffic(self, delays: list[float], responses: list[float], ok: int, failed: int) -> None:
        """In one batch: the scheduling delays of the tasks launched (seconds from their job's arrival),
        the response times of the jobs whose last outcome was sent (from arrival to that outcome), and
        the outcomes sent: `ok` tasks returned a value, `failed` did not."""

    def node_registered(self, node_id: str, peer: Hashable) -> None:
        """A node monitor registered over `peer` (a Connection in the service: `peer.peer_name`)."""

    def node_lost(self, node_id: str) -> None:
        """The node monitor's link ended and no newer link of the same id is registered."""


class JobTimer:
    """Follows jobs through the scheduler's messages and tells its observers (SchedulerObserver) when
    tasks launch, outcomes are sent and jobs end, with their delays; and which node monitor is which
    peer. Nothing in SchedulerLogic.stats says when: this is the one message-driven part."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.observers: list[SchedulerObserver] = []
        self._arrived: dict[int, float] = {}  # job id -> arrival time
        self._job_of: dict[tuple[Hashable, int], int] = {}  # (client, ref) -> job id
        self.node_ids: dict[Hashable, str] = {}  # node monitor peer -> its id
        self._peer_of: dict[str, Hashable] = {}  # node id -> its newest peer

    def client_messages(self, client: Hashable, out: list) -> None:
        now = self.clock()
        for peer, msg in out:
            if type(msg) is JobAccepted and peer == client:
                self._arrived[msg.job_id] = now
                self._job_of[(client, msg.ref)] = msg.job_id
        self.outgoing(out, now)

    def registration(self, peer: Hashable, msgs: list) -> None:
        """Note which node monitor `peer` is if `msgs` (from a peer not registered yet) registers it."""
        for msg in msgs:
            if type(msg) is RegisterNodeMonitor:
                self.node_ids[peer] = msg.node_id
                self._peer_of[msg.node_id] = peer
                for observer in self.observers:
                    observer.node_registered(msg.node_id, peer)
                return

    def node_lost(self, peer: Hashable, out: list) -> None:
        node_id = self.node_ids.pop(peer, None)
        if node_id is not None and self._peer_of.get(node_id) is peer:  # not replaced by a newer link
            del self._peer_of[node_id]
            for observer in self.observers:
                observer.node_lost(node_id)
        self.outgoing(out)

    def client_lost(self, client: Hashable, out: list) -> None:
        self.outgoing(out)
        for key in [k for k in self._job_of if k[0] == client]:  # its jobs are dropped unfinished
            self._arrived.pop(self._job_of.pop(key), None)

    def outgoing(self, out: list, now: float | None = None) -> None:
        """Report the launches and outcomes among the messages `out` to the observers, at once."""
        launched = finished = None  # arrival times of the launched tasks' jobs, of the jobs finished
        ok = failed = 0
        for peer, msg in out:
            kind = type(msg)
            if kind is TaskLaunch:
                when = self._arrived.get(msg.job_id)
                if when is not None:
                    if launched is None:
                        launched = [when]
                    else:
                        launched.append(when)
            elif kind is TaskResult:
                if msg.ok:
                    ok += 1
                else:
                    failed += 1
                if msg.last:
                    job_id = self._job_of.pop((peer, msg.ref), None)
                    when = None if job_id is None else self._arrived.pop(job_id, None)
                    if when is not None:
                        finished = [when] if finished is None else [*finished, when]
        if launched is not None or ok or failed:
            now = self.clock() if now is None else now
            delays = [now - when for when in launched] if launched is not None else _NONE
            responses = [now - when for when in finished] if finished is not None else _NONE
            for observer in self.observers:
                observer.traffic(delays, responses, ok, failed)


_NONE: list[float] = []  # shared, never changed


class StatsCounters:
    """A Prometheus collector of counters read from a logic's `stats` when scraped: `table` maps a
    metric name (without `_total`) to its help and the stats keys it adds up. Reading a Counter's
    items from the HTTP thread is safe: each lookup is atomic under the GIL."""

    def __init__(self, stats: Counter[str], table: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        self.stats = stats
        self.table = table

    def collect(self):
        from prometheus_client.core import CounterMetricFamily

        stats = self.stats
        for name, (doc, keys) in self.table.items():
            yield CounterMetricFamily(name, doc, value=sum(stats[key] for key in keys))


# metric name -> (help, the SchedulerLogic.stats keys it adds up)
SCHEDULER_COUNTERS = {
    "sparrow_jobs_submitted": ("Jobs received from clients", ("jobs", "jobs_rejected")),
    "sparrow_jobs_rejected": ("Jobs refused as invalid", ("jobs_rejected",)),
    "sparrow_tasks_submitted": ("Tasks in the jobs accepted", ("tasks",)),
    "sparrow_tasks_launched": ("Tasks handed to a node monitor (TaskLaunch)", ("launched",)),
    "sparrow_probes_sent": ("Reservations placed on node monitors (batch sampling)", ("probes",)),
    "sparrow_get_task": ("GetTask requests answered", ("get_task",)),
    "sparrow_get_task_empty": ("GetTask requests answered with NoTask", ("no_task",)),
    "sparrow_cancellations_sent": ("CancelReservations messages sent", ("cancel_messages",)),
}


# metric name -> (help, the SchedulerMetrics.outcomes keys it adds up)
OUTCOME_COUNTERS = {
    "sparrow_jobs_finished": ("Jobs whose every task has an outcome", ("jobs",)),
    "sparrow_tasks_finished": ("Tasks that returned a value", ("ok",)),
    "sparrow_tasks_failed": ("Tasks that raised or got no result of their own", ("failed",)),
}


class BucketCounts:
    """A Prometheus histogram as plain counts, made into metrics when scraped. Observing is a C
    bisection and an increment, without the locks prometheus_client's Histogram takes per value: it
    runs in the scheduler's loop for every task. A scrape copies the counts at once, so the buckets
    and the count agree (the sum may be one batch ahead)."""

    def __init__(self, name: str, doc: str, bounds: tuple[float, ...]) -> None:
        self.name, self.doc, self.bounds = name, doc, list(bounds)
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound
        self.sum = 0.0

    def observe(self, values: list[float]) -> None:
        counts, bounds = self.counts, self.bounds
        for value in values:
            counts[bisect.bisect_left(bounds, value)] += 1  # le=bound holds values <= bound
        self.sum += sum(values)

    def collect(self):
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        cumulative = list(itertools.accumulate(list(self.counts)))
        labels = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]
        buckets = list(zip(labels, cumulative, strict=True))
        yield HistogramMetricFamily(self.name, self.doc, buckets=buckets, sum_value=self.sum)


class SchedulerMetrics(SchedulerObserver):
    """The scheduler's Prometheus metrics: counters from its logic's stats, outcomes and timings from
    its JobTimer."""

    def __init__(self, registry, logic: SchedulerLogic) -> None:
        prom = require_prometheus()
        self.outcomes: Counter[str] = Counter()
        self.delay = BucketCounts(
            "sparrow_scheduling_delay_seconds", "From a job's arrival to each task's launch", DELAY_BUCKETS
        )
        self.response = BucketCounts(
            "sparrow_job_response_seconds", "From a job's arrival to its last task's outcome", RESPONSE_BUCKETS
        )
        for collector in (
            StatsCounters(logic.stats, SCHEDULER_COUNTERS), StatsCounters(self.outcomes, OUTCOME_COUNTERS),
            self.delay, self.response,
        ):  # fmt: skip
            registry.register(collector)
        prom.Gauge("sparrow_node_monitors", "Node monitors registered and live", registry=registry).set_function(
            lambda: len(logic.nodes)
        )
        prom.Gauge("sparrow_jobs_in_flight", "Jobs with tasks still to finish", registry=registry).set_function(
            lambda: len(logic.jobs)
        )

    def traffic(self, delays: list[float], responses: list[float], ok: int, failed: int) -> None:
        if delays:
            self.delay.observe(delays)
        outcomes = self.outcomes
        if responses:
            self.response.observe(responses)
            outcomes["jobs"] += len(responses)
        outcomes["ok"] += ok
        outcomes["failed"] += failed


class MeteredSchedulerLogic(SchedulerLogic):
    """SchedulerLogic whose traffic a JobTimer follows (`timer`: add observers to `timer.observers`),
    with Prometheus metrics (`metrics`) in `registry` unless it is None."""

    def __init__(self, registry, **kwargs) -> None:
        super().__init__(**kwargs)
        self.registry = registry
        self.timer = JobTimer(self.clock)
        self.metrics = None if registry is None else SchedulerMetrics(registry, self)
        if self.metrics is not None:
            self.timer.observers.append(self.metrics)

    def on_client_messages(self, peer: Hashable, msgs: list) -> list:
        out = super().on_client_messages(peer, msgs)
        self.timer.client_messages(peer, out)
        return out

    def on_client_lost(self, peer: Hashable) -> list:
        out = super().on_client_lost(peer)
        self.timer.client_lost(peer, out)
        return out

    def on_node_messages(self, peer: Hashable, msgs: list) -> list:
        out = super().on_node_messages(peer, msgs)
        timer = self.timer
        if peer not in timer.node_ids:  # the hot path, inlined: the registered ones just send traffic
            timer.registration(peer, msgs)
        timer.outgoing(out)
        return out

    def on_node_lost(self, peer: Hashable) -> list:
        out = super().on_node_lost(peer)
        self.timer.node_lost(peer, out)
        return out


# metric name -> (help, the NodeMonitorLogic.stats keys it adds up)
NODE_COUNTERS = {
    "sparrow_node_reservations": ("Reservations received", ("reservations",)),
    "sparrow_node_get_task": ("GetTask requests sent", ("get_task",)),
    "sparrow_node_get_task_empty": ("NoTask answers received", ("no_task",)),
    "sparrow_node_tasks_launched": ("Tasks launched on the executor", ("launched",)),
    "sparrow_node_reservations_cancelled": ("Reservations removed by CancelReservations", ("cancelled",)),
}


class MeteredNodeMonitorLogic(NodeMonitorLogic):
    """NodeMonitorLogic that keeps Prometheus metrics (in `registry`) of its counters and queue."""

    def __init__(self, registry, **kwargs) -> None:
        super().__init__(**kwargs)
        prom = require_prometheus()
        registry.register(StatsCounters(self.stats, NODE_COUNTERS))
        self._finished = prom.Counter("sparrow_node_tasks_finished", "Tasks that returned a value", registry=registry)
        self._failed = prom.Counter(
            "sparrow_node_tasks_failed", "Tasks that raised or whose worker died", registry=registry
        )
        # set here, not read at scrape time: the queue is a kernel object that may be in use in this thread
        self._queue_length = prom.Gauge("sparrow_node_queue_length", "Reservations waiting", registry=registry)
        self._busy = prom.Gauge("sparrow_node_busy_slots", "Slots running or asking for a task", registry=registry)
        prom.Gauge("sparrow_node_slots", "Task slots", registry=registry).set(self.slots)

    def _update(self, out: list) -> list:
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
