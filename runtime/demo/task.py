"""The task of `sparrow local --demo`, in a module of its own: executor workers import it by name, so
it imports nothing heavy."""

from __future__ import annotations

import threading
import time


def demo_task(seconds: float) -> tuple[float, float, int]:
    """Hold the slot for `seconds` (sleeping, not computing); returns the (start, end) monotonic times
    and the slot's worker: the id of the thread that ran it, unique on this host (the main thread of an
    executor's worker process, or one of a thread executor's threads)."""
    start = time.monotonic()
    time.sleep(seconds)
    return start, time.monotonic(), threading.get_native_id()
