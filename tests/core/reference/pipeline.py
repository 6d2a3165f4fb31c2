"""Reference model of csrc/sparrow/pipeline.h with the binding's face (sparrow_core.PipelineRule): one
node's last PIPELINE_RECENT run times, the view they give (short, deep, steady, when a running task may
ask ahead), whether the node asks ahead at all, how many it may hold ahead, and the half rule. The
constants are the binding's (they live once, in the header)."""

from __future__ import annotations

import math
from collections import deque

from sparrow_core import (
    PIPELINE_JIT_MARGIN,
    PIPELINE_JIT_SPREAD,
    PIPELINE_MAX_DEPTH,
    PIPELINE_MODES,
    PIPELINE_RECENT,
    PIPELINE_SHORT_TASK,
    PIPELINE_STEADY_SPREAD,
)

GATED = ("gated", "steady", "jit")


class PipelineRule:
    def __init__(self, mode: str, depth: int) -> None:
        if mode not in PIPELINE_MODES:
            raise ValueError(f"pipeline mode must be one of {', '.join(PIPELINE_MODES)}, got {mode!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= PIPELINE_MAX_DEPTH:
            raise ValueError(f"pipeline_depth must be an int in [1, {PIPELINE_MAX_DEPTH}], got {depth!r}")
        self.mode = mode
        self.depth = depth
        self.keeps_recent = mode in GATED or (mode == "always" and depth > 1)
        self._recent: deque[float] = deque(maxlen=PIPELINE_RECENT)
        self.forget()

    def forget(self) -> None:
        self._recent.clear()
        self.short_recent = self.deep = self.steady = False
        self.ask_after = self.ask_until = 0.0

    def record(self, run_time: float, round_trip: float = 0.0) -> None:
        if not (run_time >= 0 and round_trip >= 0 and math.isfinite(run_time) and math.isfinite(round_trip)):
            raise ValueError(f"run_time and round_trip must be finite and >= 0, got {run_time!r}, {round_trip!r}")
        recent = self._recent
        recent.append(run_time)
        shortest, longest = min(recent), max(recent)
        gated = self.mode in GATED
        self.short_recent = (longest if gated else sorted(recent)[len(recent) // 2]) < PIPELINE_SHORT_TASK
        self.deep = self.depth > 1 and self.short_recent
        self.steady, self.ask_after, self.ask_until = False, 0.0, 0.0
        if self.mode in ("steady", "jit") and not self.short_recent:
            spread = PIPELINE_STEADY_SPREAD if self.mode == "steady" else PIPELINE_JIT_SPREAD
            self.steady = len(recent) == PIPELINE_RECENT and longest <= spread * shortest
            if self.mode == "jit":
                self.ask_after = max(0.0, shortest - round_trip - PIPELINE_JIT_MARGIN)
            self.ask_until = longest

    @property
    def recent(self) -> list[float]:
        return list(self._recent)

    @property
    def longest(self) -> float:
        return max(self._recent, default=0.0)

    def gate_open(self, overrunning: bool) -> bool:
        if self.mode == "off":
            return False
        return self.mode not in GATED or (self.short_recent and not overrunning) or self.steady

    def ahead_limit(self, held_slots: int, may_ask: int) -> int:
        return held_slots * self.depth if self.deep else may_ask

    def half_rule_applies(self) -> bool:
        return self.deep or self.mode in GATED

    @staticmethod
    def half_allows(ahead_of_job: int, queued_of_job: int) -> bool:
        return 2 * (ahead_of_job + 1) <= queued_of_job + ahead_of_job
