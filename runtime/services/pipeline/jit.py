"""Just in time: gated, and pipelined one deep while the node's run times are steady, asking shortly before a
running task's predicted end.

Model: as "steady", but a request asked ahead should come back as the slot frees, so the task is bound a margin
early rather than a whole task early. Assumptions: within PIPELINE_JIT_SPREAD (1.5x) the running task ends after
the shortest recent run time; a request asked ahead takes about the median of its recent round trips
(JIT_ROUND_TRIP until one is measured; answers of different schedulers may cross, so each is an estimate that the
median keeps sane). On a loaded host the answer often comes after the slot freed, saving only part of the round
trip: no gain was measured on 10 ms tasks, which is why steady is the default. Algorithm: the kernel's rule in
mode "jit": the gate and the half rule as steady; a running task becomes due once it has run the shortest recent
run time less the round trip and PIPELINE_JIT_MARGIN, and stays due until it has run the longest; the shell sleeps
until the next such time (`ask_ahead_at`, `times_requests`), so nothing polls."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import sparrow_core

from .steady import Steady

JIT_ROUND_TRIP = 0.001  # seconds: the round trip of a request asked ahead until one is measured


class Jit(Steady):
    mode = "jit"
    times_requests = True

    def __init__(self, depth: int) -> None:
        super().__init__(depth)
        self._asked_at: deque[float] = deque()  # when each request asked ahead in flight went (while steady)
        self._round_trips: deque[float] = deque(maxlen=sparrow_core.PIPELINE_RECENT)  # the last ones' round trips

    def ran(self, run_time: float) -> None:
        trips = self._round_trips
        self.rule.record(run_time, sorted(trips)[len(trips) // 2] if trips else JIT_ROUND_TRIP)

    def asked_ahead(self, clock: Callable[[], float]) -> None:
        if self.rule.steady:  # its round trip is measured
            self._asked_at.append(clock())

    def answered_ahead(self, clock: Callable[[], float], in_flight: int) -> None:
        if self._asked_at:
            self._round_trips.append(clock() - self._asked_at.popleft())
            if not in_flight:  # none in flight: none of the times kept is owed an answer
                self._asked_at.clear()

    def ahead_took_slot(self) -> None:
        if self._asked_at:  # its answer will hold a slot: no round trip of a request asked ahead
            self._asked_at.popleft()

    def forget_requests(self) -> None:
        self._asked_at.clear()  # which of the requests in flight were whose is not kept: measure afresh
