"""What the machine was doing during a run: its load average and the CPU time the hypervisor gave
to other machines (steal), so a report can say which differences come from the machine."""

from __future__ import annotations

import os
from dataclasses import dataclass


def _cpu_counters() -> list[int] | None:
    """The cumulative CPU time counters of /proc/stat's `cpu` line, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class MachineNote:
    """Load average at the start and end of a run, and the steal percent over it (None off Linux)."""

    load_before: float
    load_after: float
    steal: float | None
    cpus: int


class MachineWatch:
    """`MachineWatch()` at the start of a run, `.note()` at its end."""

    def __init__(self) -> None:
        self._load = os.getloadavg()[0]
        self._counters = _cpu_counters()

    def note(self) -> MachineNote:
        after = _cpu_counters()
        steal = None
        if self._counters is not None and after is not None and len(after) >= 8:
            deltas = [b - a for a, b in zip(self._counters, after, strict=True)]
            total = sum(deltas[:8])  # user nice system idle iowait irq softirq steal
            steal = 100.0 * deltas[7] / total if total else 0.0
        return MachineNote(self._load, os.getloadavg()[0], steal, os.cpu_count() or 1)
