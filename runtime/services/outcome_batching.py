"""Holding task outcomes back briefly, so one write to a peer carries several (the scheduler's side,
to clients; and a pipelined node monitor's, to its schedulers).

A client that runs many short tasks receives one OutcomeToClient per task. Sent one by one, each costs
the scheduler a write and the client a wake-up, on a CPU the tasks' own path needs (measured: 8-11%
of the CPU a no-op task costs the whole cluster, docs/runtime.md). `OutcomeBatcher` holds a
client's OutcomeToClients for at most `delay` seconds and sends them together. A job's last outcome
(`OutcomeToClient.last`) and every other message to that client go at once, after the outcomes held
before them: a job is never complete later for it, each client's messages keep their order, and no
outcome is held longer than `delay`. A `JobAccepted` waits the same way: the client learns
a job's id only for its records (it cancels by its own ref), and sent alone it woke the client while
the job's first tasks ran, on a CPU their path needs; it goes with the job's first outcomes, ahead
of them. A `TaskStarted` is held apart, keyed by its task, and dropped when that task's outcome passes
first (the outcome says more): only a task still running a full `delay` period after it was handed
out is told as started, at the end of the next period. A client that asks when tasks start (an
executor, for `Future.running()` and `cancel()`) so pays nothing for tasks shorter than `delay`, which
at saturation is every no-op task (each TaskStarted sent cost the client a frame's decode and the
scheduler an encode, about 5 us of 60 per task). `delay=0` sends everything at once.

`may_wait` (optional) says which messages may be held instead (the rest go at once, after those held
for the same peer): a pipelined node monitor holds its OutcomeToScheduler and GetTask messages while
a task bound ahead is next on a slot (its next task is already there, so nothing waits for them),
and sends them all with the first message that may not wait, e.g. once no task is bound: one write
and one wake-up of its scheduler for several tasks (services/node_monitor.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import trio

from ..wire.connection import Connection, send_bursts, send_grouped
from ..wire.messages import JobAccepted, OutcomeToClient, TaskStarted

DEFAULT_RESULT_DELAY = 0.001  # seconds a task's outcome may wait for others to share its write


def check_result_delay(delay: float) -> float:
    """`delay` if it is a finite number of seconds >= 0, else ValueError naming it."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay < float("inf"):
        raise ValueError(f"result_delay must be a number of seconds >= 0, got {delay!r}")
    return delay


class OutcomeBatcher:
    """Sends `(peer, message)` pairs, holding the messages `may_wait` allows (default: clients'
    OutcomeToClients but a job's last, and JobAccepteds) up to `delay` seconds, and the TaskStarteds of tasks
    whose outcomes do not pass within a period."""

    def __init__(self, delay: float = DEFAULT_RESULT_DELAY, may_wait: Callable[[object], bool] | None = None) -> None:
        self.delay = check_result_delay(delay)
        self.may_wait = may_wait  # None: the default rule (inlined in `send`: a hot path)
        self._held: dict[Connection, list] = {}  # peer -> its held messages, in order
        # (peer, ref, task) -> (its TaskStarted, the period it was held in); one flat dict: an outcome costs one pop
        self._starts: dict[tuple[Connection, int, int], tuple[TaskStarted, int]] = {}
        self._period = 0  # periods flushed so far
        # run's wait: its deadline is when what is held must go (inf: nothing held), set by `send` as the first
        # message is held and cleared once all went; None before `run` starts (it then looks at what is held)
        self._wait: trio.CancelScope | None = None

    def send(self, pairs: list, later: bool = False) -> None:
        """Send `(peer, message)` pairs (as connection.send_grouped does, `later` as well), holding what
        may wait. The pairs are grouped by peer as they are read: one burst per peer, the messages held
        for a peer going before its first one that may not wait."""
        if not self.delay:
            send_grouped(pairs, later=later)
            return
        bursts: dict[Connection, list] = {}
        held = self._held
        starts = self._starts
        may_wait = self.may_wait
        for peer, msg in pairs:
            kind = type(msg)
            if kind is TaskStarted:
                if not starts:
                    self._due()
                starts[peer, msg.ref, msg.task] = (msg, self._period)
                continue
            if kind is OutcomeToClient:
                if starts:
                    starts.pop((peer, msg.ref, msg.task), None)
                wait = not msg.last if may_wait is None else may_wait(msg)
            else:
                wait = kind is JobAccepted if may_wait is None else may_wait(msg)
            if wait:
                waiting = held.get(peer)
                if waiting is None:
                    held[peer] = [msg]
                    self._due()
                else:
                    waiting.append(msg)
                continue
            burst = bursts.get(peer)
            waiting = held.pop(peer) if peer in held else None
            if burst is None:
                if waiting is None:
                    bursts[peer] = [msg]
                else:
                    waiting.append(msg)
                    bursts[peer] = waiting
            elif waiting is None:
                burst.append(msg)
            else:
                burst += waiting
                burst.append(msg)
        if bursts:
            send_bursts(bursts, later=later)
            if not held and not starts and self._wait is not None:  # all went (a job's last outcome): no flush due
                self._wait.deadline = math.inf

    def _due(self) -> None:
        """A message is held: what is held goes `delay` from now, unless a flush is due sooner."""
        wait = self._wait
        if wait is not None and wait.deadline == math.inf:
            wait.deadline = trio.current_time() + self.delay

    def forget(self, peer: Connection) -> None:
        """Drop what is held for a peer that is gone."""
        self._held.pop(peer, None)
        if self._starts:
            self._starts = {key: entry for key, entry in self._starts.items() if key[0] is not peer}

    async def run(self) -> None:
        """Send held messages at most `delay` seconds after the first of them was held; until cancelled.

        One wait per flush, whose deadline `send` sets as the first message is held and clears once what
        was held went with a job's last outcome: a flush costs one wake-up of this task, and none when
        nothing is left to flush (an event to wake on, then a sleep, cost two, the second often for nothing)."""
        if not self.delay:
            return
        try:
            while True:
                with trio.CancelScope() as wait:
                    self._wait = wait
                    if self._held or self._starts:  # held before this wait: since the last flush, or before run
                        wait.deadline = trio.current_time() + self.delay
                    await trio.sleep_forever()
                self._wait = None
                self.flush()
        finally:
            self._wait = None

    def flush(self) -> None:
        """Send everything held, now, but the TaskStarteds held in this period (they go at the next flush
        if their tasks are still without outcome then)."""
        held, self._held = self._held, {}
        period = self._period
        self._period = period + 1
        if self._starts:
            waiting = {}
            for key, (msg, since) in self._starts.items():
                if since < period:
                    held.setdefault(key[0], []).append(msg)
                else:
                    waiting[key] = (msg, since)
            self._starts = waiting  # if any, `run` waits for the next period's flush
        for peer, msgs in held.items():
            peer.send_many(msgs)
