"""What the dashboard learns from the scheduler's traffic (a SchedulerObserver): scheduling delays
and job response times of the last seconds, failed tasks, finished jobs, and the node monitors'
addresses, including those recently lost (the scheduler itself forgets a lost node monitor).

Everything here runs in the scheduler's thread: an event costs a list extend; `roll()` once a second
turns the last second's observations into quantiles over a sliding window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable

import numpy as np

from ..services.job_timer import SchedulerObserver

QUANTILE_WINDOW = 10  # seconds of observations behind each p50/p99 point
PER_SECOND_CAP = 5000  # observations kept per second and kind (a uniform sample beyond)
PENDING_LIMIT = 200_000  # observations held between two rolls at most (every other one dropped past it)
LOST_MEMORY = 600.0  # seconds a lost node monitor stays listed
LOST_KEPT = 50  # at most this many lost node monitors listed


class Quantiles:
    """p50 and p99 of the values of the last `window` rolls. Adding values is a list extend; once a
    second (the sampler's), `roll()` keeps at most `cap` of the second's values (a uniform sample: above `cap` values
    a second, each second weighs the same in the window) and computes the quantiles."""

    def __init__(self, window: int, cap: int, rng: np.random.Generator) -> None:
        self.current: list[float] = []
        self.cap = cap
        self._rng = rng
        self._past: deque[np.ndarray] = deque(maxlen=window)

    def add(self, values: list[float]) -> None:
        current = self.current
        current += values
        if len(current) > PENDING_LIMIT:  # not rolled for long (no sampler running): stay bounded
            del current[::2]

    def roll(self) -> tuple[float | None, float | None]:
        second = np.array(self.current, dtype=np.float64)
        self.current = []
        if len(second) > self.cap:
            second = self._rng.choice(second, self.cap, replace=False)
        self._past.append(second)
        values = np.concatenate(self._past)
        if len(values) == 0:
            return None, None
        p50, p99 = np.quantile(values, (0.5, 0.99))
        return float(p50), float(p99)


class Activity(SchedulerObserver):
    """Timings, outcomes and node monitor addresses, from the scheduler's JobTimer."""

    def __init__(self, clock: Callable[[], float], *, window: int = QUANTILE_WINDOW, seed: int | None = None) -> None:
        self.clock = clock
        rng = np.random.default_rng(seed)
        self.delay = Quantiles(window, PER_SECOND_CAP, rng)
        self.response = Quantiles(window, PER_SECOND_CAP, rng)
        self.tasks_failed = 0
        self.jobs_finished = 0
        self.addresses: dict[str, str] = {}  # node id -> the address its link comes from
        self.lost: dict[str, float] = {}  # node id -> when it was lost, oldest first

    def traffic(self, delays: list[float], responses: list[float], ok: int, failed: int) -> None:
        self.delay.add(delays)
        if responses:
            self.response.add(responses)
            self.jobs_finished += len(responses)
        self.tasks_failed += failed

    def node_registered(self, node_id: str, peer: Hashable) -> None:
        self.addresses[node_id] = getattr(peer, "peer_name", None) or str(peer)
        self.lost.pop(node_id, None)

    def node_lost(self, node_id: str) -> None:
        self.lost.pop(node_id, None)
        self.lost[node_id] = self.clock()
        self._forget_old_lost()

    def recently_lost(self) -> list[tuple[str, float]]:
        """(node id, seconds since it was lost) of the node monitors lost lately, latest first."""
        self._forget_old_lost()
        now = self.clock()
        return [(node_id, now - when) for node_id, when in reversed(self.lost.items())]

    def _forget_old_lost(self) -> None:
        horizon = self.clock() - LOST_MEMORY
        while self.lost:
            node_id, when = next(iter(self.lost.items()))
            if when >= horizon and len(self.lost) <= LOST_KEPT:
                break
            del self.lost[node_id]
            self.addresses.pop(node_id, None)
