"""Waiting in trio tests for a condition another task makes true (a counter a server bumps after its last send)."""

from __future__ import annotations

import trio


async def until(condition, timeout: float = 5.0) -> None:
    """Return once condition() is true; trio.TooSlowError after timeout seconds."""
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.02)
