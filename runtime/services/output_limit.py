"""A node monitor's bound on the output its tasks send to their clients: a rate cap in bytes per second.

Each task's output is already cut at the node monitor's per-task cap by its worker (task_output.py). Its way up
is bounded again here, per node monitor, by a token bucket: `rate` bytes a second, up to `burst` saved (at least
two tasks' worth at the per-task cap, each with its stdout and stderr full, so a task's whole output passes
when the node was quiet). An output over what the bucket holds keeps its first bytes and ends in a marker line
saying how many were left out; the task's outcome is not changed. The node monitor names itself in each output
it passes (Output.node).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..wire.limits import MAX_OUTPUT
from ..wire.messages import Output
from .task_output import DEFAULT_OUTPUT_CAP as DEFAULT_OUTPUT_CAP
from .task_output import marker

DEFAULT_OUTPUT_RATE = 1024 * 1024  # bytes a second of output a node monitor sends up, averaged


def check_output_settings(cap: int, rate: int) -> None:
    """A node monitor's `output_cap` is 0 to MAX_OUTPUT bytes and its `output_rate` >= 1 byte/s (ValueError)."""
    if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= MAX_OUTPUT:
        raise ValueError(f"output_cap must be an int of bytes from 0 to {MAX_OUTPUT}, got {cap!r}")
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise ValueError(f"output_rate must be an int of bytes a second >= 1, got {rate!r}")


def output_limit(node_id: str, cap: int, rate: int) -> OutputLimit:
    """The bucket of a node monitor whose tasks' output is cut at `cap` bytes a stream: `rate` bytes a second,
    at least two tasks' worth (both streams full: 4 x `cap`) saved."""
    return OutputLimit(node_id, rate, max(rate, 4 * cap))


class OutputLimit:
    """The token bucket of one node monitor `node_id`: `rate` bytes a second, at most `burst` saved."""

    def __init__(self, node_id: str, rate: int, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate < 1 or burst < 1:
            raise ValueError(f"rate and burst must be bytes >= 1, got {rate!r} and {burst!r}")
        self.node_id = node_id
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.tokens = float(burst)
        self._at = clock()
        self.cut = 0  # bytes of output left out here (the node monitor's stats)

    def admit(self, output: Output) -> Output:
        """`output` named after this node monitor and cut to what the bucket holds."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now
        stdout, stderr = output.stdout, output.stderr
        size = len(stdout) + len(stderr)
        if size > self.tokens:
            room = int(max(self.tokens, 0))
            why = f"over the node monitor's output rate cap of {self.rate:,} bytes/s"
            stdout, stderr = _cut(stdout, room, why), _cut(stderr, max(room - len(stdout), 0), why)
            self.cut += size - room
            size = room
        self.tokens -= size
        return Output(stdout, stderr, self.node_id)


def _cut(data: bytes, room: int, why: str) -> bytes:
    """`data`, if over `room` bytes, its first `room` bytes and a marker."""
    if len(data) <= room:
        return data
    return data[:room] + marker(len(data) - room, why)
