"""Steady: gated, and pipelined one deep while the node's run times are steady, asking at a task's start (the
services' default mode).

Model: as "gated", and also for tasks of any length whose end is predictable. Assumptions: when the last
PIPELINE_RECENT run times are within PIPELINE_STEADY_SPREAD (3x: a loaded host stretches a 10 ms task to 11-20 ms,
which 1.5x does not pass; 8 exponential draws pass 3x 0.3% of the time) the running task ends about when they
did, so binding behind it costs least; a request asked at the task's start has the whole task for its answer
(and a second ask after a NoTask). Algorithm: the kernel's rule in mode "steady": the gate opens for short tasks
as gated, or one deep for steady ones; then one request ahead per running task that has not run past the
longest recent run time (it overran its prediction); the half rule always."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .gated import Gated
from .policy import overrunning


class Steady(Gated):
    mode = "steady"

    def limit(self, held: int, running: int, started: Collection[float], clock: Callable[[], float]) -> int:
        rule = self.rule
        if not rule.gate_open(rule.short_recent and overrunning(started, clock)):
            return 0
        return rule.ahead_limit(held, self._due(started, clock()) if rule.steady else running)

    def _due(self, started: Collection[float], now: float) -> int:
        """The running tasks that may ask ahead now: they have run the rule's `ask_after` and not past its
        `ask_until`."""
        rule = self.rule
        low, high = now - rule.ask_until, now - rule.ask_after
        return sum(1 for when in started if low <= when <= high)

    def ask_ahead_at(self, started: Collection[float], now: float) -> float | None:
        if not self.rule.steady:
            return None
        after = self.rule.ask_after
        later = [when + after for when in started if when + after > now]
        return min(later) if later else None
