"""A clock for sans-I/O logic in tests: it reads `now`, which the test moves by hand."""

from __future__ import annotations


class ManualClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
