"""The task of `sparrow local --demo`, in a module of its own: executor workers import it by name, so
it imports nothing heavy."""

from __future__ import annotations

import time


def demo_task(seconds: float) -> tuple[float, float]:
    """Hold the slot for `seconds` (sleeping, not computing); returns the (start, end) monotonic times."""
    start = time.monotonic()
    time.sleep(seconds)
    return start, time.monotonic()
