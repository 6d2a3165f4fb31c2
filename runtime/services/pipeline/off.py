"""Off: plain late binding, no request asked ahead.

Model: a slot asks its scheduler for a task (GetTask) only once it is free, so it idles for one scheduler round
trip between two tasks. Assumptions: none (the baseline the other modes are measured against). Algorithm: the
limit of requests asked ahead is 0; nothing is timed."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .policy import PipelinePolicy


class Off(PipelinePolicy):
    mode = "off"
    asks_ahead = False

    def limit(self, held: int, running: int, started: Collection[float], clock: Callable[[], float]) -> int:
        return 0
