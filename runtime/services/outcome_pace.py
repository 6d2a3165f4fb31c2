"""Whether a node monitor's outcomes come close enough together that holding one lets the next share its write.

A pipelined node monitor may hold an outcome (and the GetTask of the slot it freed) for up to a hold delay, so
that the outcomes that follow leave in the same write and its scheduler wakes once for several (node_monitor.py).
That pays only where another outcome comes within the delay. Where they come further apart (one slot of 1 ms
tasks: one outcome every 1.05 ms against a 1 ms hold), each held outcome leaves alone and a delay later, and the
hold's timer wakes the node monitor once more per task, on the CPU its worker needs between two tasks (measured
on 2 node monitors x 1 slot of 1 ms tasks: 1.5-1.65 wake-ups and 150-155 us of the node monitor's CPU per task
holding, 1.13-1.33 and 113-120 us sending at once).

Model: `OutcomePace` keeps a moving mean (weight 1/8) of the time between the node monitor's successive outcomes,
each interval capped at twice the delay (so one long idle spell does not keep it from holding through the burst
that follows: eight close outcomes bring it back under the delay); `close` says whether that mean is under the
delay. Until an outcome has come, it is close (the node monitor holds, as it always did). The outcomes of one burst
(a worker's read) come together: the node monitor counts them and tells the pace once per burst (`outcome(count)`:
the first after the interval since the last burst, the others after none), one clock read for them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable

WEIGHT = 1 / 8  # of the newest interval in the moving mean


class OutcomePace:
    """The pace of one node monitor's outcomes against a hold `delay` (seconds)."""

    __slots__ = ("_cap", "_clock", "_delay", "_last", "close", "mean")

    def __init__(self, delay: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._delay = delay
        self._cap = 2 * delay
        self._clock = clock
        self._last: float | None = None
        self.mean = 0.0  # seconds between outcomes, moving mean
        # outcomes come, on the mean, within the delay of each other: holding one lets the next join it (an
        # attribute, kept by `outcome`: it is read once per message sent)
        self.close = True

    def outcome(self, count: int = 1) -> None:
        """`count` outcomes came now (one burst's: no time between them)."""
        now = self._clock()
        mean = self.mean
        if self._last is not None:
            mean += WEIGHT * (min(now - self._last, self._cap) - mean)
        if count > 1:  # the others, after no time: each moves the mean toward 0 by its weight
            mean *= (1 - WEIGHT) ** (count - 1)
        self._last = now
        self.mean = mean
        self.close = mean < self._delay
