"""CPU placement of services: parse CPU lists, pin a service process, lay out a local cluster.

On a host shared by several services (a local cluster), a message between two processes costs far
more when it wakes a process on another CPU than on the same one (an inter-processor interrupt; in a
virtual machine, an exit to the hypervisor too). A node monitor and its executors talk once per task
in each direction, so `LocalCluster` gives each node monitor its own share of the CPUs, the way each
would own a host, and its executor threads and worker processes inherit it (docs/runtime.md).

Error handling: a malformed CPU list, or one naming a CPU this process may not use, raises
ValueError saying which CPUs are available. Where the system cannot pin processes (not Linux),
`pin_process` raises ValueError saying so, and `LocalCluster` lets every service use every CPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

MAX_CPU = 65535  # Linux's NR_CPUS is at most 8192; a larger number is a typo, not a CPU


def can_pin() -> bool:
    """Whether this system can restrict a process to some CPUs (Linux can)."""
    return hasattr(os, "sched_setaffinity")


def available_cpus() -> list[int]:
    """The CPUs this process may run on, in order (all of them where it cannot pin)."""
    if not can_pin():
        return list(range(os.cpu_count() or 1))
    return sorted(os.sched_getaffinity(0))


def parse_cpu_list(text: str) -> list[int]:
    """ "0-3,6" -> [0, 1, 2, 3, 6] (the Linux cpuset list format). Raises ValueError naming the bad part."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise ValueError(f"CPU list {text!r}: {part!r} is not a CPU number or a range like 0-3") from None
        if first < 0 or last < first:
            raise ValueError(f"CPU list {text!r}: {part!r} is not a CPU number or a range like 0-3")
        if last > MAX_CPU:
            raise ValueError(f"CPU list {text!r}: {part!r} goes past CPU {MAX_CPU}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3,6"."""
    parts: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu != run[-1] + 1:
            parts.append(_format_run(run))
            run = []
        run.append(cpu)
    if run:
        parts.append(_format_run(run))
    return ",".join(parts)


def _format_run(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def pin_process(cpus: Sequence[int]) -> None:
    """Run this process (and the threads and processes it starts from now on) on `cpus` only."""
    if not can_pin():
        raise ValueError("this system cannot restrict a process to some CPUs (only Linux can)")
    allowed = available_cpus()
    outside = sorted(set(cpus) - set(allowed))
    if not cpus or outside:
        raise ValueError(
            f"cannot run on CPUs {format_cpu_list(cpus) or '(none)'}: this process may use {format_cpu_list(allowed)}"
        )
    os.sched_setaffinity(0, cpus)


def local_layout(schedulers: int, node_monitors: int, cpus: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
    """CPUs for each scheduler and each node monitor of a cluster on one host with `cpus`.

    Node monitor i gets the i-th of `node_monitors` equal contiguous shares of the CPUs (with more node
    monitors than CPUs, CPU i mod n). Schedulers take single CPUs from the end, so with few CPUs the
    first node monitor's CPU is the one left to the schedulers' clients. One CPU: nothing to lay out
    (every list is that CPU).
    """
    if schedulers < 1 or node_monitors < 1 or not cpus:
        raise ValueError("a layout needs at least one scheduler, one node monitor and one CPU")
    cpus = sorted(cpus)
    n = len(cpus)
    if node_monitors <= n:
        shares = [cpus[i * n // node_monitors : (i + 1) * n // node_monitors] for i in range(node_monitors)]
    else:
        shares = [[cpus[i % n]] for i in range(node_monitors)]
    return [[cpus[-1 - j % n]] for j in range(schedulers)], shares
