"""Fixtures shared by the runtime tests."""

from __future__ import annotations

import pytest
import trio.testing


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time for `trio.run(main, clock=autojump_clock)`: sleeps, timeouts and heartbeats
    jump ahead as soon as every task is blocked, so a test of a 30 s timeout takes no real time."""
    return trio.testing.MockClock(autojump_threshold=0)
