"""When a silent peer is taken for dead: the one rule of every link (client, node monitor, scheduler).

A peer that heartbeats, or answers heartbeats, is taken for dead once nothing came from it for
`timeout` seconds, checked every `interval` (timeout / HEARTBEATS_PER_TIMEOUT). A check that wakes
up more than an interval later than it asked means this process was paused (SIGSTOP, a long GC,
swap, a VM migration, an overloaded machine), not the peer: the peer then gets a fresh `timeout` to
be heard from instead of being dropped, so a pause of our own drops no peer at once when we wake.
The price: a dead peer is noticed one timeout later after each such pause.

`Connection.serve(idle_timeout=...)` applies it to every link of the scheduler and the node monitor;
the client applies it to its scheduler in its heartbeat loop.
"""

from __future__ import annotations

HEARTBEATS_PER_TIMEOUT = 4  # checks (and the client's heartbeats) per timeout
DEFAULT_SCHEDULER_TIMEOUT = 2.0  # seconds a client or a node monitor waits to hear from its scheduler


class Liveness:
    """Whether a peer last heard from at `heard` is silent too long: see the module docstring."""

    __slots__ = ("heard", "interval", "timeout")

    def __init__(self, timeout: float, now: float) -> None:
        self.timeout = timeout
        self.interval = timeout / HEARTBEATS_PER_TIMEOUT
        self.heard = now  # when the peer was last heard from

    def silent(self, now: float, asked: float) -> bool:
        """At a check that asked to run at `asked` and runs at `now`: is the peer silent too long?"""
        if now - asked > self.interval:  # we were paused, not the peer
            self.heard = now
            return False
        return now - self.heard > self.timeout
