"""Holding a process worker to its task's memory request (docs/resources.md, "Memory").

A policy has one small interface, used by ProcessExecutor for each task that asked for memory:
`hold(pid, limit, over)` as the task starts on worker `pid`; `release(pid) -> reason | None` as it ends
(the reason if the limit ended it: the worker was killed for it); `forget(pid)` once the worker is gone;
and `await run()`, its background work for the executor's lifetime. Tasks that ask no memory never
reach it.

- CgroupLimits, where a cgroup v2 memory controller is usable (`memory` in the node monitor's cgroup's
  controllers, and a subtree it may create): each such worker moves into a child cgroup of its own with
  `memory.max` = the request, `memory.swap.max` = 0 and `memory.oom.group` = 1, set back to `max` when the
  task ends. A hard limit: the kernel kills the worker (and what its task started) the moment it is over,
  and `release` reads that from the cgroup's `memory.events`. The cgroup is charged for the pages its
  processes take after the worker moved in (a cgroup v2 move leaves earlier pages where they were).
- SampledLimits, elsewhere: every SAMPLE_INTERVAL the resident memory of each held worker is read from
  `/proc/PID/statm`; one that grew by more than its limit since its task started (what the interpreter
  and earlier tasks left resident is not the task's) is reported through `over` (the executor stops the
  task). A short spike between two samples is missed, and memory of processes the task started is not
  counted.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import trio

from ..wire.resources import MEMORY, format_amount

SAMPLE_INTERVAL = 0.1  # seconds between two reads of the held workers' resident memory
CGROUP_MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))

Over = Callable[[str], object]  # called with the reason when a held worker is over its limit


def over_request(limit: int) -> str:
    """The error of a task over its memory request of `limit` bytes."""
    return f"task exceeded its memory request of {format_amount(MEMORY, limit)}"


class SampledLimits:
    """A watchdog over the workers' resident memory (module docstring)."""

    def __init__(self, interval: float = SAMPLE_INTERVAL) -> None:
        self.interval = interval
        self._held: dict[int, tuple[int, int, Over]] = {}  # pid -> (limit, resident bytes at the start, over)
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._wake = trio.Event()

    def hold(self, pid: int, limit: int, over: Over) -> None:
        self._held[pid] = (limit, self._resident(pid), over)
        self._wake.set()

    def release(self, pid: int) -> str | None:
        self._held.pop(pid, None)
        return None  # a worker over its limit was reported through `over`

    def forget(self, pid: int) -> None:
        self._held.pop(pid, None)

    async def run(self) -> None:
        """Sample the held workers while there are any; sleep on an event while there are none."""
        while True:
            if not self._held:
                self._wake = trio.Event()
                await self._wake.wait()
            await trio.sleep(self.interval)
            for pid, held in list(self._held.items()):
                limit, start, over = held
                grown = self._resident(pid) - start
                if grown > limit and self._held.get(pid) is held:
                    del self._held[pid]
                    over(f"{over_request(limit)} (its worker had grown by {grown / 2**20:.0f}MiB at a sample)")

    def _resident(self, pid: int) -> int:
        """The resident bytes of process `pid` (0 if it is gone)."""
        try:
            with open(f"/proc/{pid}/statm", "rb") as statm:
                return int(statm.read().split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return 0


class CgroupLimits:
    """A cgroup v2 child per held worker, under `base` (module docstring)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._held: dict[int, tuple[int, Path]] = {}

    def hold(self, pid: int, limit: int, over: Over) -> None:
        group = self.base / f"sparrow-worker-{pid}"
        group.mkdir(exist_ok=True)
        (group / "memory.max").write_text(str(limit))
        with contextlib.suppress(OSError):  # no swap accounting here: the limit is memory alone
            (group / "memory.swap.max").write_text("0")
        with contextlib.suppress(OSError):  # older kernels: the kernel kills the largest process only
            (group / "memory.oom.group").write_text("1")
        (group / "cgroup.procs").write_text(str(pid))
        self._held[pid] = (limit, group)

    def release(self, pid: int) -> str | None:
        held = self._held.pop(pid, None)
        if held is None:
            return None
        limit, group = held
        try:
            events = (group / "memory.events").read_text()
            (group / "memory.max").write_text("max")
        except OSError:
            return None
        killed = any(line.split()[:1] == ["oom_kill"] and line.split()[1] != "0" for line in events.splitlines())
        return over_request(limit) if killed else None

    def forget(self, pid: int) -> None:
        self._held.pop(pid, None)
        with contextlib.suppress(OSError):  # still has a process (one the task left), or never made
            (self.base / f"sparrow-worker-{pid}").rmdir()

    async def run(self) -> None:
        """Nothing to do in the background: the kernel enforces the limits."""


MemoryLimits = SampledLimits | CgroupLimits


def cgroup_base() -> Path | None:
    """The node monitor's own cgroup v2 directory if its memory controller can be given to child cgroups
    it creates there; None if not (no cgroup v2 memory controller, or not writable)."""
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
    except (OSError, StopIteration):
        return None
    for mount in CGROUP_MOUNTS:
        base = mount / own.strip().lstrip("/")
        try:
            if "memory" not in (base / "cgroup.controllers").read_text().split():
                continue
            if "memory" not in (base / "cgroup.subtree_control").read_text().split():
                (base / "cgroup.subtree_control").write_text("+memory")
            probe = base / f"sparrow-probe-{os.getpid()}"
            probe.mkdir(exist_ok=True)
            probe.rmdir()
        except OSError:
            continue
        return base
    return None


def memory_limits() -> MemoryLimits:
    """The policy this host allows: cgroups where usable, else the sampling watchdog."""
    base = cgroup_base()
    return SampledLimits() if base is None else CgroupLimits(base)
