"""What the machine was doing during a run: its load average and the CPU time the hypervisor gave
to other machines (steal), so a report can say which differences come from the machine."""

from __future__ import annotations

import os
from dataclasses import dataclass


def cpu_counters() -> list[int] | None:
    """The machine's cumulative CPU time counters (the `cpu` line of /proc/stat), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_percent(before: list[int] | None, after: list[int] | None) -> float | None:
    """Percent of the CPU time between two `cpu_counters()` the hypervisor gave to other machines
    (steal): a shared virtual machine's figures are only comparable at similar steal."""
    if before is None or after is None or len(before) < 8:
        return None
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(deltas[:8])  # user nice system idle iowait irq softirq steal (guest time is in user)
    return 100.0 * deltas[7] / total if total else 0.0


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
        self._counters = cpu_counters()

    def note(self) -> MachineNote:
        steal = steal_percent(self._counters, cpu_counters())
        return MachineNote(self._load, os.getloadavg()[0], steal, os.cpu_count() or 1)
