"""The dashboard's sampler: once a second, in the scheduler's trio loop, it reads the scheduler's
public status (`SchedulerLogic.status()`, what `sparrow status` shows), its counters and the
Activity observer, and publishes a new immutable View. Readers (the HTTP thread) only ever take
`sampler.view`, a single reference swapped whole."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import Any

import trio

from ..services.metrics import MeteredSchedulerLogic
from ..wire.messages import StatusReply
from .activity import QUANTILE_WINDOW, Activity
from .view import JOBS_LISTED, NodeRow, Point, View

logger = logging.getLogger(__name__)

SAMPLE_INTERVAL = 1.0  # seconds between samples
HISTORY = 300  # samples kept: five minutes at one a second
ERROR_LOG_INTERVAL = 60.0  # seconds: a failing sample is logged at most this often


class Sampler:
    """Samples `logic` (a MeteredSchedulerLogic, whose JobTimer it joins) into `view`."""

    def __init__(
        self,
        logic: MeteredSchedulerLogic,
        *,
        interval: float = SAMPLE_INTERVAL,
        history: int = HISTORY,
        window: int = QUANTILE_WINDOW,
        seed: int | None = None,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        if not isinstance(history, int) or history < 2:
            raise ValueError(f"history must be an int >= 2 samples, got {history!r}")
        self.logic = logic
        self.interval = interval
        self.clock: Callable[[], float] = logic.clock
        self.activity = Activity(self.clock, window=window, seed=seed)
        logic.timer.observers.append(self.activity)
        self.window = window * interval
        self.history = history * interval  # seconds of samples kept
        self._points: deque[Point] = deque(maxlen=history)
        self._started = self._last_t = self.clock()
        self._last_outcomes = self._last_launched = 0
        self.view = self._view(self._started, logic.status())

    def sample(self) -> View:
        """Take a sample and publish the new view (in the scheduler's thread)."""
        now = self.clock()
        status = self.logic.status()
        stats = status.counters
        elapsed = max(now - self._last_t, 1e-9)
        outcomes, launched = stats.get("outcomes", 0), stats.get("launched", 0)
        delay = self.activity.delay.roll()
        response = self.activity.response.roll()
        self._points.append(
            Point(
                now,
                (outcomes - self._last_outcomes) / elapsed,
                (launched - self._last_launched) / elapsed,
                *delay,
                *response,
                len(status.jobs),
                sum(n.busy for n in status.nodes),
            )
        )
        self._last_t, self._last_outcomes, self._last_launched = now, outcomes, launched
        self.view = self._view(now, status)
        return self.view

    def _view(self, now: float, status: StatusReply) -> View:
        addresses = self.activity.addresses
        nodes = [
            NodeRow(
                n.node_id,
                addresses.get(n.node_id, ""),
                "draining" if n.draining else "up",
                n.slots,
                n.busy,
                n.queued,
                n.silent_for,
                tuple(n.labels),
            )
            for n in status.nodes
        ]
        live = {n.node_id for n in status.nodes}
        nodes += [
            NodeRow(node_id, addresses.get(node_id, ""), "lost", 0, 0, 0, ago)
            for node_id, ago in self.activity.recently_lost()
            if node_id not in live
        ]
        jobs = tuple(islice(status.jobs, JOBS_LISTED))
        return View(
            scheduler_id=status.scheduler_id,
            taken_at=now,
            uptime=now - self._started,
            nodes=tuple(nodes),
            jobs_in_flight=len(status.jobs),
            jobs=jobs,
            counters=self._counters(status.counters),
            points=tuple(self._points),
            history=self.history,
            window=self.window,
            metrics=self.logic.metrics is not None,
        )

    def _counters(self, stats: dict[str, int]) -> dict[str, int]:
        failed = self.activity.tasks_failed
        return {
            "jobs_submitted": stats.get("jobs", 0) + stats.get("jobs_rejected", 0),
            "jobs_rejected": stats.get("jobs_rejected", 0),
            "jobs_finished": self.activity.jobs_finished,
            "tasks_submitted": stats.get("tasks", 0),
            "tasks_launched": stats.get("launched", 0),
            "tasks_finished": stats.get("outcomes", 0) - failed,
            "tasks_failed": failed,
            "probes": stats.get("probes", 0),
            "reprobes": stats.get("reprobes", 0),
            "get_task": stats.get("get_task", 0),
            "get_task_empty": stats.get("no_task", 0),
            "cancellations": stats.get("cancel_messages", 0),
            "node_monitors_lost": stats.get("node_monitors_lost", 0),
        }

    async def run(self) -> None:
        """Sample every `interval` seconds until cancelled.

        Error handling: a sample that raises is skipped and logged with its traceback (at most once
        a minute): the dashboard keeps its last view and never stops the scheduler it watches."""
        next_at = trio.current_time()
        quiet_until = -math.inf
        while True:
            next_at = max(next_at + self.interval, trio.current_time())  # no burst after a stall
            await trio.sleep_until(next_at)
            try:
                self.sample()
            except Exception:
                if trio.current_time() >= quiet_until:
                    quiet_until = trio.current_time() + ERROR_LOG_INTERVAL
                    logger.exception("dashboard: a sample failed; the page keeps showing the last one")

    def alongside(self, service: Callable) -> Callable:
        """`service` (an async `serve_...(*, task_status)`) with this sampler running beside it."""

        async def run_both(*, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.run)
                await service(task_status=task_status)
                nursery.cancel_scope.cancel()

        return run_both
