"""Work stealing between node monitors, the trio shell around the logic's stealing collaborator (steal_logic.py).

`Stealer.run` waits until the logic may want to steal (`poke`, called by the node monitor after each batch
of outputs), and then attempts once if `steal_wanted()`: it asks the victims the kernel chooses
(StealProbe -> StealState, all at once), gives the answers to the kernel, and asks the chosen one for
reservations (StealTake -> Stolen), which the logic queues. One attempt at a time; a failed one is not
retried until the node monitor is idle again (as in the simulator).

Links: one authenticated link per peer (the handshake of every link, role node-monitor, to the peer's
main listener), dialed when first needed and kept, at most MAX_STEAL_LINKS (the least recently used is
closed past that). Each runs `serve` in a task of its own, which delivers the one answer awaited and
sends a Heartbeat every `heartbeat_interval`: the victim drops a link silent past `link_timeout`, and
takes back what it lent on it (a stalled thief holds nothing for long). `serve_thief` is the victim's
side of an incoming link.

Timing (stats, microseconds summed, for the simulator's replay of a run: sparrow_experiments/steal_timing.py):
`steal_wake_us` from the poke that woke the stealer to its attempt's start, `steal_probe_us` over
`steal_probe_rounds` from the probes sent to the last answer, `steal_take_us` over `steal_take_rounds` the
StealTake round trip.

Log: with `log` (steal_log.py, when SPARROW_PLACEMENT_LOG is set) each attempt is written as it ends: when its
probes left, its victims, the one it took from and how many; without it (the default) an attempt does no more.

Deadlines: every request waits at most `steal_timeout` for its answer; a peer that does not answer in
time, answers out of turn or breaks the protocol has its link closed (so a late answer is never taken
for another, and the victim takes back what it lent on it), and the attempt goes on without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from ..errors import HandshakeError, ProtocolError
from ..wire.address import parse_address
from ..wire.connection import Connection
from ..wire.guard import contained
from ..wire.handshake import connect
from ..wire.messages import Heartbeat, Message, StealProbe, StealRelease, StealState, StealTake, Stolen
from .config import DEFAULT_STEAL_TIMEOUT
from .node_monitor_logic import NodeMonitorLogic
from .steal_log import StealLog

logger = logging.getLogger(__name__)

MAX_STEAL_LINKS = 64  # links to peers a node monitor keeps open for stealing


def _us(seconds: float) -> int:
    return round(seconds * 1e6)


class _Link:
    """A thief's link to one victim and the answer it waits for."""

    __slots__ = ("conn", "ended", "reply", "waiting")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.ended = trio.Event()
        self.waiting: trio.Event | None = None
        self.reply = None


class Stealer:
    """The stealing of one node monitor: its links to peers and its attempts. `route` sends the logic's
    outputs (NodeMonitorService._route); `connect_options` are those of `wire.handshake.connect`."""

    def __init__(
        self,
        logic: NodeMonitorLogic,
        route: Callable[[list], None],
        nursery: trio.Nursery,
        *,
        heartbeat_interval: float,
        link_timeout: float,
        steal_timeout: float = DEFAULT_STEAL_TIMEOUT,
        log: StealLog | None = None,
        **connect_options: Any,
    ) -> None:
        self.logic = logic
        self.route = route
        self.heartbeat_interval = heartbeat_interval
        self.link_timeout = link_timeout
        self.steal_timeout = steal_timeout
        self.log = log
        self._nursery = nursery
        self._connect = connect_options
        self._wake = trio.Event()
        self._poked_at: float | None = None  # when the stealer was woken and has not attempted yet
        self._links: dict[str, _Link] = {}  # address -> link, least recently used first
        self.stats = logic.stats

    def poke(self) -> None:
        """The logic may want to steal (it set `steal_due`): wake the stealer."""
        if self.logic.stealing.steal_due:
            self.logic.stealing.steal_due = False
            if self._poked_at is None:
                self._poked_at = trio.current_time()
            self._wake.set()

    async def run(self) -> None:
        """Attempt a steal each time the node monitor may be idle (until cancelled)."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            poked_at, self._poked_at = self._poked_at, None
            if self.logic.stealing.steal_wanted():
                if poked_at is not None:
                    self.stats["steal_wake_us"] += _us(trio.current_time() - poked_at)
                with contained(logger, "a steal attempt"):
                    if self.log is None:
                        await self.attempt()
                    else:
                        await self._logged_attempt(self.log)

    async def _logged_attempt(self, log: StealLog) -> None:
        at = time.monotonic()
        attempt: dict = {}
        try:
            await self.attempt(attempt)
        finally:
            log.attempt(at, attempt.get("victims", ()), attempt.get("chose", ""), attempt.get("took", 0))

    async def attempt(self, logged: dict | None = None) -> None:
        """Probe the victims the kernel picks, then take from the one it chooses; `logged` (if given) is told the
        victims, the one taken from and how many were taken."""
        logic = self.logic
        peers = logic.stealing.peers()
        victims = [peers[i] for i in logic.stealing.choose_victims(len(peers))]
        if logged is not None:
            logged["victims"] = victims
        self.stats["steal_attempts"] += 1
        answers: dict[str, StealState] = {}
        started = trio.current_time()

        async def probe(address: str) -> None:
            reply = await self._request(address, StealProbe())
            if type(reply) is StealState:
                answers[address] = reply
            elif reply is not None:
                self._drop(address, f"answered StealProbe with {type(reply).__name__}")

        async with trio.open_nursery() as nursery:
            for address in victims:
                nursery.start_soon(probe, address)
        asked = [a for a in victims if a in answers]
        if asked:
            self.stats["steal_probe_us"] += _us(trio.current_time() - started)
            self.stats["steal_probe_rounds"] += 1
        choice = logic.stealing.choose([answers[a] for a in asked])
        if choice is None:
            return
        index, count = choice
        address = asked[index]
        taking = trio.current_time()
        reply = await self._request(address, logic.stealing.steal_take(count))
        if reply is None:
            return
        self.stats["steal_take_us"] += _us(trio.current_time() - taking)
        self.stats["steal_take_rounds"] += 1
        link = self._links.get(address)
        if type(reply) is not Stolen or link is None:
            self._drop(address, f"answered StealTake with {type(reply).__name__}")
            return
        try:
            out = logic.on_stolen(link.conn, reply, count)
        except ProtocolError as exc:
            self._drop(address, str(exc))
            return
        if reply.reservations:
            self.stats["steals"] += 1
            if logged is not None:
                logged["chose"], logged["took"] = address, sum(r.count for r in reply.reservations)
        self.route(out)

    async def _request(self, address: str, msg: Message) -> Any:  # the peer's answer, checked by the caller
        """`msg` to the peer at `address` and its one answer, or None (no link, no answer in time: the
        link is closed)."""
        link = await self._link(address)
        if link is None:
            return None
        link.waiting = waiting = trio.Event()
        link.reply = None
        link.conn.send(msg)
        with trio.move_on_after(self.steal_timeout):
            await waiting.wait()
        if not waiting.is_set():
            self.stats["steal_timeouts"] += 1
            self._drop(address, f"no answer to {type(msg).__name__} within {self.steal_timeout:g} s")
            return None
        return link.reply

    async def _link(self, address: str) -> _Link | None:
        link = self._links.pop(address, None)
        if link is not None and not link.conn.closed and not link.ended.is_set():
            self._links[address] = link  # the most recently used now
            return link
        try:
            conn = await connect(parse_address(address), **self._connect)
        except (OSError, ValueError, HandshakeError) as exc:
            self.stats["steal_dial_failures"] += 1
            logger.info("cannot reach the steal peer %s: %s", address, exc)
            return None
        link = _Link(conn)
        self._links[address] = link
        while len(self._links) > MAX_STEAL_LINKS:
            oldest = next(iter(self._links))
            self._drop(oldest, "too many steal links")
        self._nursery.start_soon(self._serve_link, address, link)
        return link

    async def _serve_link(self, address: str, link: _Link) -> None:
        """Run the link: deliver the awaited answer, heartbeat, until it ends."""

        def on_messages(msgs: list) -> None:
            for msg in msgs:
                if link.waiting is None or link.waiting.is_set():
                    raise ProtocolError(f"{type(msg).__name__} that answers no steal request")
                link.reply = msg
                link.waiting.set()

        async def beat() -> None:
            while True:
                await trio.sleep(self.heartbeat_interval)
                link.conn.send(Heartbeat())

        try:
            with contained(logger, f"the steal link to {address}"):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(beat)
                    await link.conn.serve(on_messages)
                    nursery.cancel_scope.cancel()
        finally:
            link.ended.set()
            if link.waiting is not None:
                link.waiting.set()  # the request waiting gets None
            await link.conn.aclose()
            if self._links.get(address) is link:
                del self._links[address]

    def _drop(self, address: str, why: str) -> None:
        link = self._links.pop(address, None)
        if link is not None:
            logger.info("closing the steal link to %s: %s", address, why)
            link.conn.close_soon(why)

    async def serve_thief(self, conn: Connection) -> None:
        """The victim's side of a link from a thief: answer its probes and takes, take its releases, until
        it ends (or is silent past `link_timeout`); then take back what is still lent to it."""
        logic = self.logic

        def on_messages(msgs: list) -> None:
            out: list = []
            for msg in msgs:
                kind = type(msg)
                if kind is StealProbe:
                    conn.send(logic.stealing.steal_state())
                elif kind is StealTake:
                    conn.send(logic.give(conn, msg, out))
                elif kind is StealRelease:
                    out += logic.on_release(conn, msg)
                elif kind is not Heartbeat:
                    raise ProtocolError(f"{kind.__name__} is not allowed on a steal link")
            self.route(out)

        try:
            with contained(logger, f"the steal link from {conn}"):
                reason = await conn.serve(on_messages, idle_timeout=self.link_timeout)
                logger.info("steal link from %s ended: %s", conn, reason)
        finally:
            await conn.aclose()
            self.route(logic.on_thief_lost(conn))

    async def aclose(self) -> None:
        if self.log is not None:
            self.log.close()
        links, self._links = self._links, {}
        for link in links.values():
            await link.conn.aclose()
