"""The node monitor's side of work stealing (Hawk, USENIX ATC 2015), sans-I/O: a collaborator of NodeMonitorLogic
(`logic.stealing`), which it reaches only through StealHost (the queue, the entries per scheduler, the slots).

Every decision is the kernel's, as in the simulator's sparrow_steal policy (csrc/sparrow/sim/policy/steal.h):
which peers an idle node monitor asks (`sparrow_core.choose_victims`), which answer it steals from and how
many reservations move (`choose_steal`), and which reservations leave the victim's queue
(`ReservationQueue.steal`: from the head in service order, stopping at one that must stay). The trio shell
(steal.py) carries the four hops: StealProbe -> StealState, StealTake -> Stolen.

The logic keeps the steps its shell and observers see (`on_stolen`, `on_release`, `on_thief_lost`, `give`) and
hands them on here.

Thief: `steal_due` is set when a slot may have become free with the queue empty (a task ended, a NoTask,
peers told); the shell clears it and, if `steal_wanted()`, attempts: `choose_victims`, then `choose` over
the answers, then `steal_take`, then `on_stolen` with what came. A stolen reservation is queued here under
a key of its own (never stolen again) and its GetTask names the victim as its `origin`, so the scheduler
consumes the victim's reservation (scheduler_logic.py). Once that GetTask is answered (answers come in
request order per scheduler link: `_Reserved.order` matches them) the thief releases it to its lender
(StealRelease, used); a stolen reservation dropped unasked (its scheduler lost, draining) is given back
(not used: the lender queues it again); one dropped because its job's reservations were cancelled is used.

Victim: `steal_state()` answers a probe; `give()` takes up to the asked count from the head of its queue
(pinned: jobs that may not move, jobs of schedulers the thief is not registered with, and reservations
this node monitor borrowed itself) and keeps them as lent to that thief until released.

Resources (fit.py, docs/resources.md): a thief tells its free units with its StealTake. While reservations with
a request wait at the victim (its launch rule's window is in use), it lends from that window alone, the ones
whose requests fit together in the thief's free units and slots (FitLauncher.lend: the kernel's launch rule),
and they may go while a slot of its own is free (they wait for units, not for a slot). Each carries its request
(StolenReservation.resources): the thief queues it with it, launches it only once it fits there and holds its
units (and GPU ids of its own) while it runs, as for its own reservations; a thief that does not offer what it
asks for gives it back at once. A lent reservation taken back is queued again with its request. `on_thief_lost()`
(the steal link ended: the thief died, stalled past its deadline, or broke the protocol) queues again every
reservation still lent to it. Nothing is lost: a reservation is at the victim or lent to a live link. A
reservation may be doubled (a thief that asked, then died): the scheduler binds each task once, so the
copy gets NoTask.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

import sparrow_core

from ..errors import ProtocolError
from ..wire.limits import MAX_BLOCKED_FOR, MAX_STEAL_SCHEDULERS, MAX_STEAL_TAKE
from ..wire.messages import (
    EnqueueReservations,
    GetTask,
    Released,
    StealRelease,
    StealState,
    StealTake,
    Stolen,
    StolenReservation,
)
from ..wire.resources import ResourceError
from .fit import FitLauncher

# peers asked per attempt (Hawk's two; the simulator's replay of a run asks as many: sparrow_experiments.replay)
STEAL_VICTIMS = 2


class _Borrowed:
    """Reservations of one job stolen from one lender (`origin`: the node monitor that holds them at the
    scheduler), queued here under `key`."""

    __slots__ = ("asking", "key", "lender", "origin", "queued")

    def __init__(self, key: int, lender: Hashable, origin: str) -> None:
        self.key = key
        self.lender = lender
        self.origin = origin
        self.queued = 0
        self.asking = 0  # GetTask requests in flight for them


class _Lent:
    """Reservations of one job lent to one thief: how many, and what it takes to queue them again."""

    __slots__ = ("count", "priority", "resources", "session", "user")

    def __init__(self, user: str, priority: int, session: str, resources: dict[str, int] | None) -> None:
        self.count = 0
        self.user = user
        self.priority = priority
        self.session = session
        self.resources = resources  # what each task asks for besides its slot (None: nothing)


class StealEntry(Protocol):
    """What stealing reads and changes of the host's record of one (scheduler, job) (node_monitor_logic._Reserved)."""

    key: int
    scheduler: Hashable
    job_id: int
    user: str
    session: str
    queued: int
    asking: int
    ahead: int
    stealable: bool
    borrowed: list | None
    order: deque | None
    request: tuple[int, ...] | None


Entry = TypeVar("Entry", bound=StealEntry)


class StealHost(Protocol[Entry]):
    """What stealing needs of the node monitor's logic (NodeMonitorLogic)."""

    queue: sparrow_core.ReservationQueue
    free: int
    draining: bool
    stats: Counter[str]
    clock: Callable[[], float]
    granted_at: float
    fit: FitLauncher | None

    def idle(self) -> bool:
        """A slot is free, nothing waits to run here, and it is not draining."""
        ...

    def jobs_of(self, scheduler: Hashable) -> dict[int, Entry] | None:
        """The entries of a scheduler this node monitor is registered with, by job id (None: not registered)."""
        ...

    def scheduler_jobs(self) -> Iterable[tuple[Hashable, dict[int, Entry]]]: ...
    def new_entry(self, scheduler: Hashable, jobs: dict[int, Entry], job_id: int, user: str, session: str) -> Entry: ...
    def add_key(self, entry: Entry) -> int:
        """A new queue key whose reservations are `entry`'s."""
        ...

    def drop_key(self, key: int) -> None: ...
    def entry_at(self, key: int) -> Entry: ...
    def forget_if_idle(self, jobs: dict[int, Entry], entry: Entry) -> None: ...
    def enqueue(self, scheduler: Hashable, jobs: dict[int, Entry], msg: EnqueueReservations) -> None: ...
    def fill(self, out: list) -> None:
        """Serve the queue into free slots (and ask ahead), appending the messages to `out`."""
        ...


class WorkStealing(Generic[Entry]):
    """The work-stealing state and decisions of a node monitor (module docstring), over its host's queue."""

    def __init__(self, host: StealHost[Entry], steal: bool, seed: int | None) -> None:
        if not isinstance(steal, bool):
            raise ValueError(f"steal must be a bool, got {steal!r}")
        self._host = host
        self.steal = steal
        self.steal_due = False  # the shell should see whether to attempt a steal (steal_wanted)
        self.steal_rng = sparrow_core.Rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
        self.node_id = ""  # this node monitor's id: the origin of the reservations it lends
        self._scheduler_ids: dict[Hashable, str] = {}  # scheduler link -> its id (Registered)
        self._by_scheduler_id: dict[str, Hashable] = {}
        self._peer_lists: dict[Hashable, list[str]] = {}  # scheduler link -> the peers it told (StealPeers)
        self._peers: list[str] | None = None  # cache: the union of _peer_lists, sorted
        self._lent: dict[Hashable, dict[tuple[Hashable, int], _Lent]] = {}  # thief link -> (scheduler, job) -> lent
        self.borrowed: dict[int, _Borrowed] = {}  # queue key -> the borrowed reservations queued under it

    # -- schedulers ---------------------------------------------------------------------------------

    def scheduler_named(self, scheduler: Hashable, scheduler_id: str) -> None:
        self._scheduler_ids[scheduler] = scheduler_id
        self._by_scheduler_id[scheduler_id] = scheduler

    def scheduler_gone(self, scheduler: Hashable) -> None:
        scheduler_id = self._scheduler_ids.pop(scheduler, None)
        if scheduler_id is not None and self._by_scheduler_id.get(scheduler_id) is scheduler:
            del self._by_scheduler_id[scheduler_id]
        if self._peer_lists.pop(scheduler, None) is not None:
            self._peers = None
        for lent in self._lent.values():  # it dropped them: nothing to take back
            for key in [k for k in lent if k[0] is scheduler]:
                del lent[key]

    def peers_told(self, scheduler: Hashable, peers: Sequence[str]) -> None:
        self._peer_lists[scheduler] = list(peers)
        self._peers = None
        self.steal_due = self.steal

    def peers(self) -> list[str]:
        """The steal addresses of the peers every scheduler told, together."""
        if self._peers is None:
            self._peers = sorted({p for peers in self._peer_lists.values() for p in peers})
        return self._peers

    # -- thief --------------------------------------------------------------------------------------

    def steal_wanted(self) -> bool:
        """A slot is free, nothing is queued, and there are peers to ask."""
        return self.steal and self._host.idle() and bool(self.peers())

    def choose_victims(self, n_peers: int) -> list[int]:
        """Which of `n_peers` peers (indexes into `peers()`) to ask: the kernel's choice."""
        return sparrow_core.choose_victims(self.steal_rng, n_peers + 1, n_peers, STEAL_VICTIMS).tolist()

    def choose(self, answers: Sequence[StealState]) -> tuple[int, int] | None:
        """Which answer to steal from and how many to take (at most the free slots), or None: the kernel's
        choice (choose_steal)."""
        free = self._host.free
        if not answers or free <= 0:
            return None
        return sparrow_core.choose_steal(
            self.steal_rng,
            [a.stealable for a in answers],
            [a.blocked_for for a in answers],
            max_take=min(free, MAX_STEAL_TAKE),
        )

    def steal_take(self, count: int) -> StealTake:
        """The request for `count` reservations, naming the schedulers this node monitor is registered with and
        what it has free of its resources."""
        fit = self._host.fit
        schedulers = tuple(sorted(self._by_scheduler_id))[:MAX_STEAL_SCHEDULERS]
        return StealTake(count, schedulers, None if fit is None else fit.free_units())

    def on_stolen(self, lender: Hashable, msg: Stolen, asked: int) -> list:
        """Queue the reservations `lender` gave (ProtocolError: more than `asked`), each with its request; ones of
        a scheduler this node monitor is not registered with, named for another user, or asking for resources it
        does not offer (or other than its job's here) go back at once."""
        out: list = []
        host = self._host
        if sum(r.count for r in msg.reservations) > asked:
            raise ProtocolError(f"{sum(r.count for r in msg.reservations)} reservations stolen, {asked} asked for")
        for r in msg.reservations:
            scheduler = self._by_scheduler_id.get(r.scheduler_id)
            jobs = None if scheduler is None else host.jobs_of(scheduler)
            entry = None if jobs is None else jobs.get(r.job_id)
            request, offered = self._request(r.resources)
            if (
                jobs is None
                or host.draining
                or not offered
                or (entry is not None and (entry.user != r.user or entry.request != request))
            ):
                host.stats["stolen_given_back"] += r.count
                out.append((lender, StealRelease([Released(r.scheduler_id, r.job_id, r.count, False)])))
                continue
            if entry is None:
                entry = host.new_entry(scheduler, jobs, r.job_id, r.user, r.session)
                entry.request = request
            borrowed = self._borrowed_for(entry, lender, r.origin)
            host.queue.push(borrowed.key, entry.user, r.priority, count=r.count)
            borrowed.queued += r.count
            entry.queued += r.count
            if request is not None and host.fit is not None:
                host.fit.sized += r.count  # the launch rule holds it to its units (fit.py)
            host.stats["stolen"] += r.count
        host.fill(out)
        return out

    def _request(self, resources: dict[str, int] | None) -> tuple[tuple[int, ...] | None, bool]:
        """A stolen reservation's request over this node monitor's kinds (None: it asks for none), and whether
        this node monitor offers it (its capacity holds it)."""
        if not resources:
            return None, True
        fit = self._host.fit
        if fit is None:
            return None, False
        try:
            return fit.request(resources), True
        except ResourceError:
            return None, False

    def _borrowed_for(self, entry: Entry, lender: Hashable, origin: str) -> _Borrowed:
        if entry.borrowed is None:
            entry.borrowed = []
            entry.order = deque([None] * (entry.asking + entry.ahead))  # the own requests in flight
        for borrowed in entry.borrowed:
            if borrowed.lender is lender and borrowed.origin == origin:
                return borrowed
        borrowed = _Borrowed(self._host.add_key(entry), lender, origin)
        entry.borrowed.append(borrowed)
        self.borrowed[borrowed.key] = borrowed
        return borrowed

    def ask_for(self, entry: Entry, key: int) -> GetTask:
        """The GetTask for the reservation just popped under `key` (own or borrowed) of an entry with
        borrowed ones, noted in its order."""
        borrowed = self.borrowed.get(key)
        assert entry.order is not None  # an entry with borrowed reservations keeps its order
        entry.order.append(borrowed)
        if borrowed is None:
            return GetTask(entry.job_id)
        borrowed.queued -= 1
        borrowed.asking += 1
        return GetTask(entry.job_id, borrowed.origin)

    def answered_for(self, entry: Entry, out: list) -> None:
        """The entry's oldest request was answered: if it was for a borrowed reservation, release it."""
        assert entry.order is not None  # an entry with borrowed reservations keeps its order
        borrowed = entry.order.popleft()
        if borrowed is not None:
            borrowed.asking -= 1
            self._release(borrowed.lender, entry, 1, True, out)

    def drop_borrowed(self, entry: Entry, out: list, used: bool) -> int:
        """Remove the entry's queued borrowed reservations, releasing them; returns how many."""
        dropped = 0
        for borrowed in entry.borrowed or ():
            n = self._host.queue.cancel(borrowed.key)
            if n:
                self._left_queue(entry, n)
                borrowed.queued -= n
                dropped += n
                self._release(borrowed.lender, entry, n, used, out)
        return dropped

    def give_back(self, entry: Entry, out: list, asked: bool) -> None:
        """The entry's scheduler is gone: give every borrowed reservation back, queued or (`asked`) asked for
        without an answer (the scheduler may not have taken the request); forget them."""
        for borrowed in entry.borrowed or ():
            cancelled = self._host.queue.cancel(borrowed.key)
            self._left_queue(entry, cancelled)
            n = cancelled + (borrowed.asking if asked else 0)
            if n:
                self._release(borrowed.lender, entry, n, False, out)
        self.forget_borrowed(entry)

    def _left_queue(self, entry: Entry, count: int) -> None:
        if count and self._host.fit is not None:
            self._host.fit.left_queue(entry, count)

    def forget_borrowed(self, entry: Entry) -> None:
        for borrowed in entry.borrowed or ():
            self.borrowed.pop(borrowed.key, None)
            self._host.drop_key(borrowed.key)
        entry.borrowed = entry.order = None

    def _release(self, lender: Hashable, entry: Entry, n: int, used: bool, out: list) -> None:
        scheduler_id = self._scheduler_ids.get(entry.scheduler, "")
        self._host.stats["steal_released" if used else "stolen_given_back"] += n
        while n > 0:
            count = min(n, MAX_STEAL_TAKE)
            out.append((lender, StealRelease([Released(scheduler_id, entry.job_id, count, used)])))
            n -= count

    # -- victim -------------------------------------------------------------------------------------

    def _waiting(self) -> int:
        """Reservations that wait here for a slot or, in the launch rule's window, for units (a slot of its own
        free: those in the window wait for units, not for a slot), less those borrowed; 0: none could move."""
        host = self._host
        staged = 0 if host.fit is None else len(host.fit.staged)
        if (host.free > 0 and not staged) or host.draining or not self.steal:
            return 0
        borrowed = sum(b.queued for b in self.borrowed.values()) if self.borrowed else 0
        return max(len(host.queue) + staged - borrowed, 0)

    def steal_state(self) -> StealState:
        """What a thief's probe is told: reservations that could move (none with a slot free and nothing waiting
        for units: they will run here now) and how long the latest task to start here has run."""
        host = self._host
        waiting = self._waiting()
        if not waiting:
            return StealState(0, 0.0)
        blocked = min(max(host.clock() - host.granted_at, 0.0), MAX_BLOCKED_FOR)
        return StealState(waiting, blocked)

    def give(self, thief: Hashable, msg: StealTake, out: list) -> Stolen:
        """Lend `thief` up to `msg.count` reservations from the head of the queue (the kernel's
        take_reservations), or while reservations with a request wait here, from the launch rule's window those
        that fit together in the thief's free units (FitLauncher.lend); none while a slot is free with nothing
        waiting for units (the simulator's rule) or while draining. What the lending frees to launch here is
        appended to `out`."""
        host = self._host
        if not self._waiting():
            return Stolen([])
        shared = set(msg.schedulers)
        pinned = list(self.borrowed)
        for scheduler, jobs in host.scheduler_jobs():
            keep_all = self._scheduler_ids.get(scheduler) not in shared
            pinned += [e.key for e in jobs.values() if keep_all or not e.stealable]
        groups: dict[int, list[int]] = {}  # queue key -> [count, priority of the first]
        fit = host.fit
        if fit is not None and fit.active:  # only the window: the queue behind it may hold requests too
            taken = [(key, priority) for key, _, priority in fit.lend(msg.free, msg.count, set(pinned))]
        else:
            taken = [(r.job_id, r.priority) for r in host.queue.steal(msg.count, pinned)]
        for key, priority in taken:
            group = groups.setdefault(key, [0, priority])
            group[0] += 1
        lent = self._lent.setdefault(thief, {})
        given = []
        for key, (n, priority) in groups.items():
            entry = host.entry_at(key)
            entry.queued -= n
            resources = None if entry.request is None or fit is None else fit.units(entry.request)
            record = lent.get((entry.scheduler, entry.job_id))
            if record is None:
                record = lent[(entry.scheduler, entry.job_id)] = _Lent(entry.user, priority, entry.session, resources)
            record.count += n
            scheduler_id = self._scheduler_ids[entry.scheduler]
            given.append(
                StolenReservation(
                    scheduler_id, entry.job_id, entry.user, priority, entry.session, self.node_id, n, resources
                )
            )
            own = host.jobs_of(entry.scheduler)
            assert own is not None  # its entry is live
            host.forget_if_idle(own, entry)
        host.stats["lent"] += len(taken)
        if taken and fit is not None:
            host.fill(out)  # the window's head may have gone: what it held back may launch now
        return Stolen(given)

    def on_release(self, thief: Hashable, msg: StealRelease) -> list:
        """The thief is done with lent reservations: forget the used ones, queue the others again. A release
        of more than was lent, or of nothing lent (taken back meanwhile), counts for what was lent."""
        out: list = []
        lent = self._lent.get(thief)
        if not lent:
            return out
        for item in msg.items:
            scheduler = self._by_scheduler_id.get(item.scheduler_id)
            record = lent.get((scheduler, item.job_id))
            if record is None:
                continue
            n = min(item.count, record.count)
            record.count -= n
            if record.count == 0:
                del lent[(scheduler, item.job_id)]
            if not item.used:
                self._lend_back(scheduler, item.job_id, record, n)
        self._host.fill(out)
        return out

    def on_thief_lost(self, thief: Hashable) -> list:
        """The steal link to `thief` ended: queue again every reservation still lent to it."""
        out: list = []
        for (scheduler, job_id), record in self._lent.pop(thief, {}).items():
            self._lend_back(scheduler, job_id, record, record.count)
        self._host.fill(out)
        return out

    def lent_cancelled(self, scheduler: Hashable, job_id: int) -> None:
        """The job's reservations were cancelled here: whatever was lent of it needs no taking back."""
        for lent in self._lent.values():
            lent.pop((scheduler, job_id), None)

    def _lend_back(self, scheduler: Hashable | None, job_id: int, record: _Lent, n: int) -> None:
        jobs = None if scheduler is None else self._host.jobs_of(scheduler)
        if jobs is None or n <= 0:
            return  # its scheduler is gone: it dropped them too
        self._host.stats["steal_taken_back"] += n
        self._host.enqueue(
            scheduler,
            jobs,
            EnqueueReservations(job_id, record.user, record.priority, n, record.session, True, record.resources),
        )
