"""A scheduler's per-user task metrics: tasks ended by user and outcome (ok, failed, cancelled), and their run
times by user, as Prometheus series with a bounded set of labels (docs/metrics.md, "Per user").

Labels: the first `max_users` users this scheduler sees ending a task get a `user` label of their own (a job
that names no user is `user=""`); every later one is counted under `user="other"`. So a scheduler exports at
most `max_users` + 1 users' series, whoever submits, and a user keeps its label for the process's life (a
counter that changed labels would reset).

Source: the scheduler's task history (task_history.py) records each task once, at its outcome, with its user,
how it ended and when it launched and ended. The scheduler's metrics (metrics.SchedulerMetrics) call `count`
after each batch that sent outcomes (the JobTimer's report, in the scheduler's own thread), and it counts the
entries added since: those from the history's newest entry back to the newest one it counted before (the
history only appends, and drops from its oldest end; if that one was dropped, every entry left is newer).
Entries of users without a label yet are taken after the others, in the order they ended, so that labels go to
the first users seen. The hot path gains no call per outcome: one call per batch with outcomes, then per new
entry a lookup, a bisection and two increments (about 140 ns on the development machine). A task that never
ran (cancelled before it launched, no node monitor could take it) is counted and has no run time.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..wire.messages import CANCELLED
from .task_history import TaskEntry, TaskHistory

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

DEFAULT_METRICS_USERS = 20  # users with series of their own (each: 3 counters and a histogram of 14 series)
OTHER = "other"  # the label of every user past the first `max_users`
OUTCOMES = ("ok", "failed", "cancelled")
RUN_TIME_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0, 1800.0)


def check_metrics_users(value: object) -> int:
    """`value` if it is an int >= 0 (ValueError naming `metrics_users` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"metrics_users must be an int >= 0, got {value!r}")
    return value


class UserTaskMetrics:
    """The per-user series of one scheduler (module docstring), read from `history` at each `count`; register it
    with a Prometheus registry.

    Each label's counts are one flat list (one increment per task on the hot path): a row per outcome
    (OUTCOMES' order) of `width` counts, the tasks that ran by run-time bucket (the last: above every bound)
    then the tasks that never ran; and last of all the sum of the run times."""

    def __init__(self, history: TaskHistory, max_users: int = DEFAULT_METRICS_USERS) -> None:
        self.entries = history.entries
        self.max_users = check_metrics_users(max_users)
        self.bounds = list(RUN_TIME_BUCKETS)
        self.width = len(self.bounds) + 2  # buckets, the one above them, and "never ran"
        self.users: dict[str, list] = {}  # the first max_users users seen -> their counts
        self.other = self._counts()
        self._newest: TaskEntry | None = None  # the newest entry counted

    def _counts(self) -> list:
        return [0] * (len(OUTCOMES) * self.width) + [0.0]

    def count(self) -> None:
        """Count the entries added to the history since the last call (a hot path: after each batch with
        outcomes; the entries of a batch are nearly always one user's, whose counts are looked up once)."""
        entries = self.entries
        if not entries or entries[-1] is self._newest:
            return
        counted, self._newest = self._newest, entries[-1]
        users, bounds, width = self.users, self.bounds, self.width
        bisect_left = bisect.bisect_left
        unlabelled = None  # entries of users without a label yet, newest first
        user = counts = None  # the last entry's user and its counts
        for entry in reversed(entries):
            if entry is counted:
                break
            if entry.user is not user:
                user = entry.user
                counts = users.get(user)
            if counts is None:
                if unlabelled is None:
                    unlabelled = [entry]
                else:
                    unlabelled.append(entry)
                continue
            row = 0 if entry.ok else 2 * width if entry.failure == CANCELLED else width
            if entry.node:  # it ran
                run = entry.ended - entry.launched
                counts[row + bisect_left(bounds, run)] += 1
                counts[-1] += run
            else:
                counts[row + width - 1] += 1
        if unlabelled is not None:  # in the order they ended: the first users seen get the labels
            self._label_and_count(reversed(unlabelled))

    def _label_and_count(self, entries: Iterable[TaskEntry]) -> None:
        users, width = self.users, self.width
        for entry in entries:
            counts = users.get(entry.user)
            if counts is None:
                # a label of its own while there is room; else `other` (the names past the bound are never held)
                counts = self.other if len(users) >= self.max_users else users.setdefault(entry.user, self._counts())
            row = 0 if entry.ok else 2 * width if entry.failure == CANCELLED else width
            if entry.node:
                run = entry.ended - entry.launched
                counts[row + bisect.bisect_left(self.bounds, run)] += 1
                counts[-1] += run
            else:
                counts[row + width - 1] += 1

    def collect(self) -> Iterator[Metric]:
        """The series, read from the HTTP thread: each list is copied at once (atomic under the GIL)."""
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        tasks = CounterMetricFamily(
            "sparrow_user_tasks",
            "Tasks that ended, by user and outcome (ok, failed, cancelled)",
            labels=("user", "outcome"),
        )
        runs = HistogramMetricFamily(
            "sparrow_user_task_run_seconds",
            "Run time of the tasks that ran, from launch to outcome, by user",
            labels=("user",),
        )
        bounds = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]
        width = self.width
        labelled = list(self.users.items())
        for label, held in labelled if not any(self.other[:-1]) else [*labelled, (OTHER, self.other)]:
            counts = list(held)  # one copy: the rows and the sum agree
            rows = [counts[o * width : (o + 1) * width] for o in range(len(OUTCOMES))]
            for outcome, row in zip(OUTCOMES, rows, strict=True):
                tasks.add_metric([label, outcome], sum(row))
            ran = [sum(row[b] for row in rows) for b in range(width - 1)]
            cumulative = list(itertools.accumulate(ran))
            runs.add_metric([label], list(zip(bounds, cumulative, strict=True)), counts[-1])
        yield tasks
        yield runs
