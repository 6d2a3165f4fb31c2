"""A scheduler's per-user task metrics: tasks ended by user and outcome (ok, failed, cancelled), and their run
times by user, as Prometheus series with a bounded set of labels (docs/metrics.md, "Per user").

Labels: the first `max_users` users this scheduler sees ending a task get a `user` label of their own (a job
that names no user is `user=""`); every later one is counted under `user="other"`. So a scheduler exports at
most `max_users` + 1 users' series, whoever submits, and a user keeps its label for the process's life (a
counter that changed labels would reset).

Source: the scheduler's task history (task_history.py) records each task once, at its outcome, with its user,
how it ended and when it launched and ended. This is an instrument of the logic's steps (instruments.observed):
after each step, in the scheduler's own thread, it counts the entries that step added, in the order they were
added: those from its newest entry back to the newest one it counted before (the history only appends, and drops
from its oldest end; if that one was dropped, every entry left is newer). The hot path gains no call per outcome:
one identity check per step, then per new entry a lookup, a bisection and a few increments. A task that never ran
(cancelled before it launched, no node monitor could take it) is counted and has no run time.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
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


class _User:
    """One label's counts: tasks by outcome (OUTCOMES' order), run times by bucket (the last: above every
    bound) and their sum."""

    __slots__ = ("buckets", "label", "outcomes", "run_sum")

    def __init__(self, label: str, n_buckets: int) -> None:
        self.label = label
        self.outcomes = [0, 0, 0]
        self.buckets = [0] * (n_buckets + 1)
        self.run_sum = 0.0


class UserTaskMetrics:
    """The per-user series of one scheduler (module docstring), read from `history`; register it with a
    Prometheus registry and append it to the logic's instruments."""

    def __init__(self, history: TaskHistory, max_users: int = DEFAULT_METRICS_USERS) -> None:
        self.entries = history.entries
        self.max_users = check_metrics_users(max_users)
        self.bounds = list(RUN_TIME_BUCKETS)
        self.users: dict[str, _User] = {}  # the first max_users users seen -> their counts
        self.other = _User(OTHER, len(self.bounds))
        self._own = 0  # users with a label of their own
        self._newest: TaskEntry | None = None  # the newest entry counted

    def step(self, event: str, args: tuple, out: list) -> None:
        """The instrument hook: count the entries the step added to the history."""
        entries = self.entries
        if not entries or entries[-1] is self._newest:
            return
        counted, self._newest = self._newest, entries[-1]
        new = []
        for entry in reversed(entries):
            if entry is counted:
                break
            new.append(entry)
        users, bounds = self.users, self.bounds
        for entry in reversed(new):  # in the order they ended: the first users seen get the labels
            user = users.get(entry.user)
            if user is None:
                user = self._label(entry.user)
            user.outcomes[0 if entry.ok else 2 if entry.failure == CANCELLED else 1] += 1
            if entry.node:  # it ran
                run = entry.ended - entry.launched
                user.buckets[bisect.bisect_left(bounds, run)] += 1
                user.run_sum += run

    def _label(self, name: str) -> _User:
        """A new label for user `name`, or `other` once max_users have theirs (not remembered: the names of the
        users past the bound are never held, however many there are)."""
        if self._own >= self.max_users:
            return self.other
        self._own += 1
        user = self.users[name] = _User(name, len(self.bounds))
        return user

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
        labelled = list(self.users.values())
        for user in labelled if not any(self.other.outcomes) else [*labelled, self.other]:
            for outcome, count in zip(OUTCOMES, list(user.outcomes), strict=True):
                tasks.add_metric([user.label, outcome], count)
            cumulative = list(itertools.accumulate(list(user.buckets)))
            runs.add_metric([user.label], list(zip(bounds, cumulative, strict=True)), user.run_sum)
        yield tasks
        yield runs
