"""Prometheus metrics of the services (`--metrics-port`), with the optional prometheus-client package
(served over HTTP, with a scheduler's dashboard, by http_server.py).

One source per number. The counters are the logic's own `stats` (SchedulerLogic, NodeMonitorLogic),
read when Prometheus scrapes. What no counter holds comes from the messages a scheduler's logic
sends, per batch, in the service's own thread: every step of the logic (instruments.observed: one
chokepoint, so a step added to the logic later is seen too) is told to a `JobTimer`
(job_timer.py), which tells its observers (these metrics, the dashboard) the scheduling delays (job received to
task handed to a node monitor), job response times (job received to its last outcome sent) and
outcomes. Nothing here changes a decision. Names and meanings are listed in docs/metrics.md.

- scheduler: jobs and tasks submitted, launched, finished, failed; probes sent; GetTask answers,
  empty ones; cancellations sent; registered node monitors and jobs in flight; histograms of the
  scheduling delay and the job response time; per user (a bounded set of labels), tasks by outcome and
  a histogram of their run times, read from its task history (user_metrics.py).
- node monitor: reservations received, GetTask sent and empty answers, tasks launched, finished
  and failed, reservations cancelled; its queue length, slots and busy slots.

Error handling: `require_prometheus` raises RuntimeError saying how to install the package; a
scheduler without it serves its dashboard alone (`registry_if_available`).
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .instruments import Instruments, observed
from .job_timer import JobTimer, SchedulerObserver
from .node_monitor_logic import NodeMonitorLogic
from .scheduler_logic import SchedulerLogic
from .user_metrics import DEFAULT_METRICS_USERS, UserTaskMetrics

logger = logging.getLogger(__name__)

DELAY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
RESPONSE_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
INSTALL_HINT = "pip install 'sparrow-core[metrics]' (or: pip install prometheus-client)"


def require_prometheus() -> ModuleType:
    """The prometheus_client module, or RuntimeError saying how to install it."""
    try:
        import prometheus_client
    except ImportError:
        raise RuntimeError(f"--metrics-port needs the prometheus-client package: {INSTALL_HINT}") from None
    return prometheus_client


def new_registry() -> CollectorRegistry:
    """A registry with this process's CPU, memory and file descriptor metrics."""
    prom = require_prometheus()
    registry = prom.CollectorRegistry()
    prom.ProcessCollector(registry=registry)
    return registry


def registry_if_available() -> CollectorRegistry | None:
    """`new_registry()`, or None with a warning when prometheus-client is missing: a scheduler's HTTP
    port then serves its dashboard alone."""
    try:
        return new_registry()
    except RuntimeError:
        logger.warning("serving the dashboard without Prometheus metrics: %s", INSTALL_HINT)
        return None


# NodeMonitorLogic's steps beside its on_* methods (instruments.steps); its other public methods only read
NODE_MONITOR_STEPS = ("drain", "give")

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:  # mypy cannot follow a class made at run time: to it, each is its logic with instruments

    class _ObservedSchedulerLogic(SchedulerLogic):
        instruments: Instruments

    class _ObservedNodeMonitorLogic(NodeMonitorLogic):
        instruments: Instruments
else:
    _ObservedSchedulerLogic = observed(SchedulerLogic)
    _ObservedNodeMonitorLogic = observed(NodeMonitorLogic, also=NODE_MONITOR_STEPS)


class StatsCounters:
    """A Prometheus collector of counters read from a logic's `stats` when scraped: `table` maps a
    metric name (without `_total`) to its help and the stats keys it adds up. Reading a Counter's
    items from the HTTP thread is safe: each lookup is atomic under the GIL."""

    def __init__(self, stats: Counter[str], table: Mapping[str, tuple[str, tuple[str, ...]]]) -> None:
        self.stats = stats
        self.table = table

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily

        stats = self.stats
        for name, (doc, keys) in self.table.items():
            yield CounterMetricFamily(name, doc, value=sum(stats[key] for key in keys))


# metric name -> (help, the SchedulerLogic.stats keys it adds up)
SCHEDULER_COUNTERS = {
    "sparrow_jobs_submitted": ("Jobs received from clients", ("jobs", "jobs_rejected")),
    "sparrow_jobs_rejected": ("Jobs refused as invalid", ("jobs_rejected",)),
    "sparrow_tasks_submitted": ("Tasks in the jobs accepted", ("tasks",)),
    "sparrow_tasks_launched": ("Tasks handed to a node monitor (TaskToNode)", ("launched",)),
    "sparrow_tasks_launched_preferred": (
        "Tasks with a placement preference launched on a node monitor they prefer",
        ("launched_preferred",),
    ),
    "sparrow_tasks_launched_not_preferred": (
        "Tasks with a placement preference launched elsewhere (their preferred ones were busy)",
        ("launched_not_preferred",),
    ),
    "sparrow_tasks_bound_with_reservations": (
        "Tasks sent with their job's reservations to a node monitor believed idle, unasked (--bind-idle)",
        ("bound_with_reservations",),
    ),
    "sparrow_probes_sent": ("Reservations placed on node monitors (batch sampling)", ("probes",)),
    "sparrow_get_task": ("GetTask requests answered", ("get_task",)),
    "sparrow_get_task_empty": ("GetTask requests answered with NoTask", ("no_task",)),
    "sparrow_get_task_stolen": (
        "GetTask requests for a reservation stolen from another node monitor (--steal)",
        ("get_task_stolen",),
    ),
    "sparrow_cancellations_sent": ("CancelReservations messages sent", ("cancel_messages",)),
    "sparrow_node_monitors_lost": ("Node monitors dropped: silent, disconnected or redialed", ("node_monitors_lost",)),
    "sparrow_scheduler_bytes_received": (
        "Bytes of task payloads from clients and of outcomes from node monitors",
        ("bytes_from_clients", "bytes_from_node_monitors"),
    ),
    "sparrow_scheduler_bytes_sent": (
        "Bytes of task payloads to node monitors and of outcomes to clients",
        ("bytes_to_node_monitors", "bytes_to_clients"),
    ),
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

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        cumulative = list(itertools.accumulate(list(self.counts)))
        labels = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]
        buckets = list(zip(labels, cumulative, strict=True))
        yield HistogramMetricFamily(self.name, self.doc, buckets=buckets, sum_value=self.sum)


class SchedulerMetrics(SchedulerObserver):
    """The scheduler's Prometheus metrics: counters from its logic's stats, outcomes and timings from
    its JobTimer, and per user (the first `metrics_users` seen with series of their own) from its task history
    after each batch with outcomes (user_metrics.py)."""

    def __init__(
        self, registry: CollectorRegistry, logic: SchedulerLogic, metrics_users: int = DEFAULT_METRICS_USERS
    ) -> None:
        prom = require_prometheus()
        self.users = UserTaskMetrics(logic.history, metrics_users)
        self.outcomes: Counter[str] = Counter()
        self.delay = BucketCounts(
            "sparrow_scheduling_delay_seconds", "From a job's arrival to each task's launch", DELAY_BUCKETS
        )
        self.response = BucketCounts(
            "sparrow_job_response_seconds", "From a job's arrival to its last task's outcome", RESPONSE_BUCKETS
        )
        for collector in (
            StatsCounters(logic.stats, SCHEDULER_COUNTERS),
            StatsCounters(self.outcomes, OUTCOME_COUNTERS),
            self.delay,
            self.response,
            self.users,
        ):
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
        if ok or failed:
            self.users.count()


class MeteredSchedulerLogic(_ObservedSchedulerLogic):
    """SchedulerLogic whose every step a JobTimer follows (`timer`, an instrument of its steps: add
    observers to `timer.observers`), with Prometheus metrics (`metrics`; per user, series of their own for the
    first `metrics_users` users) in `registry` unless it is None."""

    def __init__(
        self, registry: CollectorRegistry | None, metrics_users: int = DEFAULT_METRICS_USERS, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.registry = registry
        self.timer = JobTimer(self.clock)
        self.instruments.append(self.timer)
        self.metrics = None if registry is None else SchedulerMetrics(registry, self, metrics_users)
        if self.metrics is not None:
            self.timer.observers.append(self.metrics)


# metric name -> (help, the NodeMonitorLogic.stats keys it adds up)
NODE_COUNTERS = {
    "sparrow_node_reservations": ("Reservations received", ("reservations",)),
    "sparrow_node_get_task": ("GetTask requests sent", ("get_task",)),
    "sparrow_node_get_task_empty": ("NoTask answers received", ("no_task",)),
    "sparrow_node_tasks_launched": ("Tasks launched on the executor", ("launched",)),
    "sparrow_node_get_task_ahead": ("GetTask requests sent for a busy slot (pipelining)", ("asked_ahead",)),
    "sparrow_node_tasks_bound_ahead": ("Tasks answered ahead that waited for a slot (pipelining)", ("bound_ahead",)),
    "sparrow_node_tasks_bound_unasked": (
        "Tasks a scheduler sent unasked with their reservations (its --bind-idle)",
        ("bound_unasked",),
    ),
    "sparrow_node_reservations_cancelled": ("Reservations removed by CancelReservations", ("cancelled",)),
    "sparrow_node_steal_attempts": ("Work-stealing attempts started while idle (--steal)", ("steal_attempts",)),
    "sparrow_node_reservations_stolen": ("Reservations taken from peers' queues (--steal)", ("stolen",)),
    "sparrow_node_reservations_lent": ("Reservations given to stealing peers (--steal)", ("lent",)),
    "sparrow_node_steal_timeouts": ("Steal requests a peer did not answer in time (--steal)", ("steal_timeouts",)),
    "sparrow_node_steal_wake_microseconds": (
        "Time from a reason to steal to the attempt's start, summed (--steal)",
        ("steal_wake_us",),
    ),
    "sparrow_node_steal_probe_microseconds": (
        "Time from the steal probes sent to their last answer, summed over sparrow_node_steal_probe_rounds (--steal)",
        ("steal_probe_us",),
    ),
    "sparrow_node_steal_probe_rounds": ("Steal attempts whose probes were answered (--steal)", ("steal_probe_rounds",)),
    "sparrow_node_steal_take_microseconds": (
        "StealTake round trips, summed over sparrow_node_steal_take_rounds (--steal)",
        ("steal_take_us",),
    ),
    "sparrow_node_steal_take_rounds": ("StealTake requests answered (--steal)", ("steal_take_rounds",)),
    "sparrow_node_task_output_bytes": ("Bytes of task output sent to the schedulers", ("output_bytes",)),
    "sparrow_node_task_output_cut_bytes": (
        "Bytes of task output left out at the node monitor's output rate cap (--output-rate)",
        ("output_cut_bytes",),
    ),
}


class NodeMonitorMetrics:
    """A node monitor's Prometheus metrics (in `registry`): counters from its logic's stats, and, as an
    instrument of the logic's steps (instruments.observed), its outcomes and its queue and busy slots
    after every step."""

    def __init__(self, registry: CollectorRegistry, logic: NodeMonitorLogic) -> None:
        prom = require_prometheus()
        self.logic = logic
        registry.register(StatsCounters(logic.stats, NODE_COUNTERS))
        self._finished = prom.Counter("sparrow_node_tasks_finished", "Tasks that returned a value", registry=registry)
        self._failed = prom.Counter(
            "sparrow_node_tasks_failed", "Tasks that raised or whose worker died", registry=registry
        )
        # set here, not read at scrape time: the queue is a kernel object that may be in use in this thread
        self._queue_length = prom.Gauge("sparrow_node_queue_length", "Reservations waiting", registry=registry)
        self._busy = prom.Gauge("sparrow_node_busy_slots", "Slots running or asking for a task", registry=registry)
        prom.Gauge("sparrow_node_slots", "Task slots", registry=registry).set(logic.slots)
        prom.Gauge(
            "sparrow_node_schedulers", "Schedulers this node monitor is registered with now", registry=registry
        ).set_function(lambda: len(logic.frame_limits))

    def step(self, event: str, args: tuple, out: list) -> None:
        if event == "on_task_done" or event == "on_task_ended":  # (scheduler, job_id, task, outcome)
            (self._finished if args[3].ok else self._failed).inc()
        logic = self.logic
        self._queue_length.set(len(logic.queue))
        self._busy.set(logic.slots - logic.free)


class MeteredNodeMonitorLogic(_ObservedNodeMonitorLogic):
    """NodeMonitorLogic with Prometheus metrics (`metrics`, in `registry`) told of its every step."""

    def __init__(self, registry: CollectorRegistry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.metrics = NodeMonitorMetrics(registry, self)
        self.instruments.append(self.metrics)
