"""What the dashboard learns from the scheduler's traffic (a SchedulerObserver): scheduling delays
and job response times of the last seconds, failed tasks, finished jobs, and the node monitors'
addresses, including those recently lost (the scheduler itself forgets a lost node monitor).

Everything here runs in the scheduler's thread: each event is O(1); `roll()` once a second turns
the last second's observations into quantiles over a sliding window.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Hashable

import numpy as np

from ..metrics import SchedulerObserver

QUANTILE_WINDOW = 10  # seconds of observations behind each p50/p99 point
PER_SECOND_CAP = 5000  # observations kept per second and kind (a uniform sample beyond)
LOST_MEMORY = 600.0  # seconds a lost node monitor stays listed
LOST_KEPT = 50  # at most this many lost node monitors listed


class Reservoir:
    """A uniform sample of at most `cap` of the values added: Li's algorithm L, which draws how many
    values to skip, so a value not kept costs nothing past the cap."""

    __slots__ = ("cap", "seen", "values", "_rng", "_w", "_next")

    def __init__(self, cap: int, rng: random.Random) -> None:
        self.cap = cap
        self._rng = rng
        self.take()

    def extend(self, values: list[float]) -> None:
        start = self.seen
        self.seen += len(values)
        room = self.cap - len(self.values)
        if room > 0:
            self.values.extend(values[:room])
        while self._next < self.seen:  # the next value to keep (0-based, in the whole stream) is here
            self.values[self._rng.randrange(self.cap)] = values[self._next - start]
            self._advance()

    def take(self) -> np.ndarray:
        """The sample so far, and start a new one."""
        out = np.array(getattr(self, "values", ()), dtype=np.float64)
        self.values: list[float] = []
        self.seen = 0
        self._w = math.exp(math.log(self._rng.random() or 1e-300) / self.cap)
        self._next = self.cap - 1
        self._advance()
        return out

    def _advance(self) -> None:
        rng = self._rng
        self._next += int(math.log(rng.random() or 1e-300) / math.log1p(-self._w)) + 1
        self._w *= math.exp(math.log(rng.random() or 1e-300) / self.cap)


class Quantiles:
    """p50 and p99 of the values of the last `window` rolls."""

    def __init__(self, window: int, cap: int, rng: random.Random) -> None:
        self.current = Reservoir(cap, rng)
        self._past: deque[np.ndarray] = deque(maxlen=window)

    def roll(self) -> tuple[float | None, float | None]:
        self._past.append(self.current.take())
        values = np.concatenate(self._past)
        if len(values) == 0:
            return None, None
        p50, p99 = np.quantile(values, (0.5, 0.99))
        return float(p50), float(p99)


class Activity(SchedulerObserver):
    """Timings, outcomes and node monitor addresses, from the scheduler's JobTimer."""

    def __init__(self, clock: Callable[[], float], *, window: int = QUANTILE_WINDOW, seed: int | None = None) -> None:
        self.clock = clock
        rng = random.Random(seed)
        self.delay = Quantiles(window, PER_SECOND_CAP, rng)
        self.response = Quantiles(window, PER_SECOND_CAP, rng)
        self.tasks_failed = 0
        self.jobs_finished = 0
        self.addresses: dict[str, str] = {}  # node id -> the address its link comes from
        self.lost: dict[str, float] = {}  # node id -> when it was lost, oldest first

    def traffic(self, delays: list[float], responses: list[float], ok: int, failed: int) -> None:
        if delays:
            self.delay.current.extend(delays)
        if responses:
            self.response.current.extend(responses)
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
