"""Holding task outcomes back briefly, so one write to a client carries several (the scheduler's side).

A client that runs many short tasks receives one OutcomeToClient per task. Sent one by one, each costs
the scheduler a write and the client a wake-up, on a CPU the tasks' own path needs (measured: 8-11%
of the CPU a no-op task costs the whole cluster, docs/runtime.md). `OutcomeBatcher` holds a
client's OutcomeToClients for at most `delay` seconds and sends them together. A job's last outcome
(`OutcomeToClient.last`) and every other message to that client go at once, after the outcomes held
before them: a job is never complete later for it, each client's messages keep their order, and no
outcome is held longer than `delay`. `delay=0` sends everything at once.
"""

from __future__ import annotations

import trio

from ..wire.connection import Connection, send_grouped
from ..wire.messages import OutcomeToClient

DEFAULT_RESULT_DELAY = 0.001  # seconds a task's outcome may wait for others to share its write


def check_result_delay(delay: float) -> float:
    """`delay` if it is a finite number of seconds >= 0, else ValueError naming it."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay < float("inf"):
        raise ValueError(f"result_delay must be a number of seconds >= 0, got {delay!r}")
    return delay


class OutcomeBatcher:
    """Sends `(peer, message)` pairs, holding clients' OutcomeToClients up to `delay` seconds."""

    def __init__(self, delay: float = DEFAULT_RESULT_DELAY) -> None:
        self.delay = check_result_delay(delay)
        self._held: dict[Connection, list] = {}  # client -> its held OutcomeToClients, in order
        self._started = trio.Event()  # set when a client's first outcome is held

    def send(self, pairs: list) -> None:
        """Send `(peer, message)` pairs (as connection.send_grouped does), holding what may wait."""
        if not self.delay:
            send_grouped(pairs)
            return
        now: list[tuple[Connection, object]] = []
        held = self._held
        for pair in pairs:
            peer, msg = pair
            if type(msg) is OutcomeToClient and not msg.last:
                waiting = held.get(peer)
                if waiting is None:
                    held[peer] = [msg]
                    self._started.set()
                else:
                    waiting.append(msg)
                continue
            waiting = held.pop(peer, None)
            if waiting is not None:
                now.extend((peer, m) for m in waiting)
            now.append(pair)
        send_grouped(now)

    def forget(self, peer: Connection) -> None:
        """Drop what is held for a client that is gone."""
        self._held.pop(peer, None)

    async def run(self) -> None:
        """Send held outcomes at most `delay` seconds after the first of them was held; until cancelled."""
        if not self.delay:
            return
        while True:
            await self._started.wait()
            self._started = trio.Event()
            if not self._held:  # already sent, with a job's last outcome
                continue
            await trio.sleep(self.delay)
            self.flush()

    def flush(self) -> None:
        """Send everything held, now."""
        held, self._held = self._held, {}
        for peer, msgs in held.items():
            peer.send_many(msgs)
