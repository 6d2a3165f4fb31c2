"""The node monitor's resources: its capacity, what is free, and which waiting reservation launches.

A node monitor with a capacity (`NodeMonitorLogic(host=HostResources(...))`) holds each launched request's units
from the moment it asks its scheduler for a task until the task ends (or NoTask gives them back), and
gives each GPU task device ids of its own. The decision of which reservation launches is the kernel's
fit launcher (csrc/sparrow/fit_launcher.h, `sparrow_core.choose_launch`: bounded skip-ahead with aging,
docs/resources.md), over a window of reservations taken from the head of the reservation queue in
service order (`staged`: out of the kernel queue, so that the window can be looked at).

The window is used only while reservations with a request wait here (`active`); otherwise the node
monitor launches, pipelines and steals as it always has. While it is active, plain reservations go
through it too, as requests of one slot: a plain task may pass a large head, within the rule's bound.
Work stealing (steal_logic.py): a victim lends a thief, from its window, the reservations whose requests fit
together in the thief's free units (`lend`, by the same kernel rule: the first that fits, in service order);
the stolen ones keep their request at the thief. Borrowed reservations are never staged there: one at the head
of the queue launches, with the window empty, once its request fits in what is free (`fits`), holding its
units as any other.

Error handling: a request naming a kind this node monitor does not offer, or more than its capacity,
is a ResourceError (the logic answers its scheduler with Error: the scheduler's view of this node
monitor's capacity and the request disagree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sparrow_core

from ..wire.resources import CPUS, GPU, MEMORY, MILLI, SLOTS, ResourceError, format_resources, to_units

DEFAULT_FIT_WINDOW = 8  # reservations the launch rule looks at, the head included
DEFAULT_FIT_MAX_SKIPS = 8  # launches that may pass the head before the host is owed to it (docs/resources.md)


@dataclass(frozen=True)
class HostResources:
    """What one node monitor offers besides its slots: its `capacity` in units (wire/resources.py), the device
    ids of its GPUs (None: "0", "1", ...) and the CPUs a task may be pinned to, and its launch rule (`window`
    reservations looked at, `max_skips` launches past the head; docs/resources.md)."""

    capacity: Mapping[str, int]
    gpu_ids: Sequence[str] | None = None
    cpu_ids: Sequence[int] = ()
    window: int = DEFAULT_FIT_WINDOW
    max_skips: int = DEFAULT_FIT_MAX_SKIPS

    def __post_init__(self) -> None:
        check_fit_rule(self.window, self.max_skips)


class FitLauncher:
    """Capacity, free units and the window of one node monitor (module docstring)."""

    def __init__(
        self,
        capacity: Mapping[str, int],
        *,
        gpu_ids: Sequence[str] | None = None,
        cpu_ids: Sequence[int] = (),
        window: int = DEFAULT_FIT_WINDOW,
        max_skips: int = DEFAULT_FIT_MAX_SKIPS,
        by_priority: bool = False,
    ) -> None:
        self.kinds = (SLOTS, *sorted(name for name, units in capacity.items() if units))
        self.capacity = {name: capacity[name] for name in self.kinds[1:]}
        self.free = [self.capacity[name] for name in self.kinds[1:]]  # units free per kind besides slots
        count = self.capacity.get(GPU, 0)
        ids = list(gpu_ids) if gpu_ids is not None else [str(i) for i in range(count)]
        if len(ids) != count:
            raise ValueError(f"{count} GPUs declared but {len(ids)} device ids given")
        self.gpus_free = ids  # device ids no running task holds
        self._gpu_at = self.kinds.index(GPU) if GPU in self.capacity else -1
        self.cpus_free = sorted(cpu_ids)  # CPUs a task may be pinned to that no running task is
        self._cpu_at = self.kinds.index(CPUS) if CPUS in self.capacity else -1
        self._memory_at = self.kinds.index(MEMORY) if MEMORY in self.capacity else -1
        self.window = window
        self.max_skips = max_skips
        self.plain = (1,) + (0,) * (len(self.kinds) - 1)  # a reservation that names nothing: one slot
        self.staged: list[tuple[int, Any, int]] = []  # (queue key, entry, priority) out of the queue, service order
        self.by_priority = by_priority  # the queue serves lower priorities first: so does the window
        self.sized = 0  # reservations with a request still in the kernel queue
        self.head: tuple[int, Any, int] | None = None  # the staged head the skips count for
        self.head_skips = 0
        self.skips = 0  # launches that passed a head, in all
        self.devices: dict[tuple, list[str]] = {}  # (scheduler, job, task) running -> its GPU ids
        self.pinned: dict[tuple, list[int]] = {}  # (scheduler, job, task) running -> the CPUs it is pinned to
        # (scheduler, job, task) running -> its request; while not empty, tasks with resources run here (the shell
        # then tells each its place: placed.py)
        self.held: dict[tuple, tuple[int, ...]] = {}

    @property
    def active(self) -> bool:
        """Reservations with a request wait here (in the window or the queue)."""
        return self.sized > 0 or bool(self.staged)

    def request(self, resources: Mapping[str, int]) -> tuple[int, ...]:
        """The request as a vector over this node monitor's kinds; ResourceError if it could never fit here."""
        vector = tuple(to_units(resources, self.kinds))
        over = {name: resources[name] for name in resources if resources[name] > self.capacity[name]}
        if over:
            raise ResourceError(
                f"resources {format_resources(over)} are over this node monitor's capacity "
                f"{format_resources({name: self.capacity[name] for name in over})}"
            )
        return vector

    def take(self, request: tuple[int, ...]) -> None:
        """Hold `request`'s units (a GetTask is sent for it)."""
        for k in range(1, len(request)):
            self.free[k - 1] -= request[k]

    def give(self, request: tuple[int, ...]) -> None:
        """Give back `request`'s units."""
        for k in range(1, len(request)):
            self.free[k - 1] += request[k]

    def started(self, key: tuple, request: tuple[int, ...]) -> None:
        """Task `key` starts with the units held for its request: it holds them until it ends, with GPU ids of
        its own (`devices`) and, for whole CPUs where that many are free of pinned tasks, CPUs (`pinned`)."""
        self.held[key] = request
        if self._gpu_at >= 0 and request[self._gpu_at]:
            ids = self.gpus_free[: request[self._gpu_at]]
            del self.gpus_free[: len(ids)]
            self.devices[key] = ids
        whole = request[self._cpu_at] // MILLI if self._cpu_at >= 0 else 0
        if whole and len(self.cpus_free) >= whole:
            self.pinned[key] = self.cpus_free[:whole]
            del self.cpus_free[:whole]

    def ended(self, key: tuple) -> None:
        """Task `key` ended: its units and GPU ids are free again (nothing if it held none)."""
        request = self.held.pop(key, None)
        if request is not None:
            self.give(request)
            self.gpus_free.extend(self.devices.pop(key, ()))
            self.cpus_free.extend(self.pinned.pop(key, ()))

    def place(self, key: tuple) -> tuple[list[str], list[int]] | None:
        """The GPU ids and CPUs of running task `key` if it asked for resources (None: it did not)."""
        if key not in self.held:
            return None
        return self.devices.get(key, []), self.pinned.get(key, [])

    def memory(self, key: tuple) -> int:
        """The bytes of memory running task `key` asked for (0: none): its worker is held to them (memory_limit.py)."""
        request = self.held.get(key)
        return request[self._memory_at] if request is not None and self._memory_at >= 0 else 0

    def free_units(self) -> dict[str, int]:
        """What is free of each kind now, by name (a thief's StealTake.free)."""
        return dict(zip(self.kinds[1:], self.free, strict=True))

    def units(self, request: tuple[int, ...]) -> dict[str, int]:
        """`request` by name, the kinds it names (its wire form: EnqueueReservations.resources)."""
        return {kind: units for kind, units in zip(self.kinds[1:], request[1:], strict=True) if units}

    def fits(self, request: tuple[int, ...]) -> bool:
        """Whether `request` fits in what is free now, a slot aside (the kernel's rule on one reservation)."""
        return sparrow_core.choose_launch([1, *self.free], [request], 0, 1, 0) == 0

    def left_queue(self, entry: Any, count: int) -> None:
        """`count` of the entry's reservations left the kernel queue other than through the window (borrowed
        ones launched or dropped, own ones lent from the queue)."""
        if entry.request is not None:
            self.sized -= count

    def lend(self, free: Mapping[str, int] | None, count: int, keep: set[int]) -> list[tuple[int, Any, int]]:
        """Take out of the window, for a thief with `free` units (None: it offers none) and `count` slots, the
        staged reservations (not under a key of `keep`) whose requests fit there together: the kernel's rule
        picks the first that fits in service order, again with what is left. Returns them (queue key, entry,
        priority) in service order."""
        have = [count, *((free or {}).get(kind, 0) for kind in self.kinds[1:])]
        movable = [i for i, (key, _, _) in enumerate(self.staged) if key not in keep]
        chosen: list[int] = []
        while movable and have[0] > 0:
            requests = [self.plain if self.staged[i][1].request is None else self.staged[i][1].request for i in movable]
            index = sparrow_core.choose_launch(have, requests, 0, len(requests), len(requests))
            if index is None:
                break
            have = [h - r for h, r in zip(have, requests[index], strict=True)]
            chosen.append(movable.pop(index))
        chosen.sort()
        lent = [self.staged[i] for i in chosen]
        for i in reversed(chosen):
            del self.staged[i]
        return lent

    def unstage(self, entry: Any, from_queue: int) -> int:
        """The entry's reservations are dropped: `from_queue` left the kernel queue; those in the window
        leave it too. Returns how many left the window."""
        self.left_queue(entry, from_queue)
        kept = [staged for staged in self.staged if staged[1] is not entry]
        dropped = len(self.staged) - len(kept)
        self.staged = kept
        return dropped

    def choose(self, slots_free: int) -> int | None:
        """Which staged reservation launches now with `slots_free` slots, by the kernel's rule; None: none.
        Counts the head's skips."""
        staged = self.staged
        if staged[0] is not self.head:
            self.head, self.head_skips = staged[0], 0
        requests = [self.plain if entry.request is None else entry.request for _, entry, _ in staged]
        index = sparrow_core.choose_launch(
            [slots_free, *self.free], requests, self.head_skips, self.window, self.max_skips
        )
        if index:
            self.head_skips += 1
            self.skips += 1
        return index

    def stage(self, queue: Any, borrowed: Mapping[int, Any], by_key: Mapping[int, Any]) -> None:
        """Fill the window from the head of `queue` in service order; borrowed reservations stay queued. Under
        the priority policy a reservation staged later with a lower priority number goes before those waiting
        in the window (stable: FIFO within a level), as it would in the queue."""
        added = False
        while len(self.staged) < self.window and queue:
            head = queue.peek()
            if head.job_id in borrowed:
                break
            queue.pop()
            entry = by_key[head.job_id]
            if entry.request is not None:
                self.sized -= 1
            self.staged.append((head.job_id, entry, head.priority))
            added = True
        if added and self.by_priority:
            self.staged.sort(key=lambda staged: staged[2])

    def launched(self, index: int) -> tuple[int, Any]:
        """Take the staged reservation `index` out of the window and hold its units."""
        key, entry, _ = self.staged.pop(index)
        if entry.request is not None:
            self.take(entry.request)
        return key, entry


def check_fit_rule(window: int, max_skips: int) -> None:
    """ValueError naming the argument unless the rule's window >= 1 and max_skips >= 0 are ints."""
    for name, value, low in (("window", window, 1), ("max_skips", max_skips, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
