"""The machine a run ran on (its CPUs, their model, whether it is a virtual machine), and what it was
doing during the run: its load average and the CPU time the hypervisor gave to other machines
(steal), so a report can say which differences come from the machine."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

from sparrow_runtime.services.cpus import available_cpus


@dataclass(frozen=True)
class Machine:
    """`cpus` this process may run on, their `model`, and whether the CPU says it runs under a
    hypervisor (x86's `hypervisor` flag; False where it cannot tell)."""

    cpus: int
    model: str
    virtual: bool

    def describe(self) -> str:
        """ "2 CPUs (AMD EPYC) of a virtual machine", for a sentence of a report."""
        where = " of a virtual machine" if self.virtual else ""
        return f"{self.cpus} CPU{'s' if self.cpus != 1 else ''} ({self.model}){where}"


def this_machine(cpuinfo: str = "/proc/cpuinfo") -> Machine:
    """This machine: the model and the hypervisor flag from `cpuinfo` (Linux), else what `platform`
    tells; "unknown model" if neither does."""
    model, virtual = "", False
    try:
        with open(cpuinfo) as f:
            text = f.read()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "cpu model") and not model:
            model = value
        elif key == "flags":
            virtual = virtual or "hypervisor" in value.split()
    model = model or platform.processor() or platform.machine() or "unknown model"
    return Machine(len(available_cpus()), model, virtual)


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
