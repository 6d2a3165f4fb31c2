"""The door before the handshake: how many connections of one service may be in the handshake at once,
and which one goes when there are too many.

A stranger needs no key to open TCP connections and leave them idle, each holding a place in the
handshake until its deadline. `HandshakeGate` (one per listener) bounds them so that such a flood
cannot keep anyone else out:

- at most `per_source` pending connections from one source address (its IP), and at most `limit` in
  all. Unix-socket peers are all this host's (and the socket's folder says who may connect): they
  count under `limit` only, so a burst of local peers (node monitors starting together) is not cut
  to `per_source`;
- when a newcomer finds either bound reached, the oldest pending connection goes, not the newcomer:
  the oldest of the newcomer's own source if that source is at its bound, else the oldest of the
  source with the most pending. A flood then only ever evicts its own connections (or, from the
  same address as a real peer, lets each newcomer in for as long as `per_source` newer ones take to
  arrive: far longer than a handshake takes);
- an evicted connection is told why ("refused: too many pending connections", one framed Error in
  plain text, which a TLS client recognises too: tls.start_tls) and closed;
- a refused handshake is logged (handshake.accept) at most once per LOG_EVERY seconds per source,
  the next line saying how many were not;
- evictions, and connections closed for sending nothing in time (handshake.accept's first-byte
  deadline, which keeps idle connections from holding their places for the whole handshake), are
  logged at most once per LOG_EVERY seconds, naming the source of the last one and the counts.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
from collections.abc import Iterator

import trio

from ..errors import HandshakeError, SilentPeer
from . import limits
from .framing import encode_frames
from .messages import Error

logger = logging.getLogger(__name__)

PENDING_REFUSAL = "refused: too many pending connections"
# what an evicted peer reads: a framed Error, in plain text whatever the link's security
REFUSAL_BYTES = bytes(encode_frames([Error(PENDING_REFUSAL)]))
_DRAIN_READS = 4  # reads of what an evicted peer sent, before its socket is closed (_refuse_now)
MAX_LOGGED_SOURCES = 1024  # sources whose last logged refusal a gate remembers (refusal_note)
UNIX_SOURCE = "unix peer"  # every peer of a Unix socket is this host's: one source


class _Pending:
    """One connection in the handshake: its source, its stream and the scope that evicts it."""

    __slots__ = ("evicted", "scope", "source", "stream")

    def __init__(self, source: str, stream: trio.abc.Stream) -> None:
        self.source = source
        self.stream = stream
        self.scope = trio.CancelScope()
        self.evicted = False


class HandshakeGate:
    """Bounds a service's connections that have not finished the handshake: `per_source` from one
    source, `limit` in all; the oldest goes to make room (see the module's comment)."""

    LOG_EVERY = 10.0

    def __init__(
        self, limit: int = limits.MAX_PENDING_HANDSHAKES, per_source: int = limits.MAX_PENDING_PER_SOURCE
    ) -> None:
        if not 1 <= per_source <= limit:
            raise ValueError(f"per_source must be in [1, limit={limit}], got {per_source}")
        self.limit = limit
        self.per_source = per_source
        self.pending = 0
        self.evicted = 0  # connections closed to make room for newer ones
        self.silent = 0  # connections closed for sending nothing in time (handshake.FIRST_BYTE_TIMEOUT)
        self._by_source: dict[str, dict[_Pending, None]] = {}  # each source's pending, oldest first
        self._logged_at = -math.inf
        self._refusals: dict[str, list] = {}  # source -> [when one was last logged, refusals since not logged]

    @contextlib.contextmanager
    def admit(self, stream: trio.abc.Stream) -> Iterator[None]:
        """Hold a place for `stream` while the body (its handshake) runs, evicting the oldest pending
        connection if the bounds are reached. An evicted body is cancelled, its stream told why and
        closed, and HandshakeError(PENDING_REFUSAL) raised."""
        source = peer_source(stream)
        victim = self._victim(source)
        if victim is not None:
            self._evict(victim)
        entry = _Pending(source, stream)
        self._by_source.setdefault(source, {})[entry] = None
        self.pending += 1
        try:
            with entry.scope:
                yield
        except SilentPeer:
            self.silent += 1
            self._note(source)
            raise
        finally:
            self.pending -= 1
            mine = self._by_source[source]
            del mine[entry]
            if not mine:
                del self._by_source[source]
        if entry.evicted:
            raise HandshakeError(PENDING_REFUSAL)

    def _victim(self, source: str) -> _Pending | None:
        """The connection to evict before one more from `source` is admitted; None while there is room."""
        mine = self._by_source.get(source)
        if mine is not None and len(mine) >= self.per_source and source != UNIX_SOURCE:
            return next(iter(mine))
        if self.pending < self.limit:
            return None
        busiest = max(self._by_source.values(), key=len)
        return next(iter(busiest))

    def _evict(self, victim: _Pending) -> None:
        victim.evicted = True
        victim.scope.cancel()
        _refuse_now(victim.stream)
        self.evicted += 1
        self._note(victim.source)

    def refusal_note(self, stream: trio.abc.Stream) -> str | None:
        """Whether to log a refused handshake of `stream`: None while one from its source was logged in the
        last LOG_EVERY seconds (this one is counted instead), else what the line adds (the count not logged)."""
        source = peer_source(stream)
        now = trio.current_time()
        last = self._refusals.get(source)
        if last is not None and now - last[0] < self.LOG_EVERY:
            last[1] += 1
            return None
        if len(self._refusals) >= MAX_LOGGED_SOURCES:  # forget the sources quiet for LOG_EVERY (all, if none is)
            quiet = {k: v for k, v in self._refusals.items() if now - v[0] < self.LOG_EVERY}
            self._refusals = quiet if len(quiet) < MAX_LOGGED_SOURCES else {}
        self._refusals[source] = [now, 0]
        unlogged = 0 if last is None else last[1]
        return f" ({unlogged} more from {source} not logged)" if unlogged else ""

    def _note(self, source: str) -> None:
        """Log the connections closed before their handshake (evicted or silent) at most once per
        LOG_EVERY seconds: the counts so far and the source of the last one."""
        now = trio.current_time()
        if now - self._logged_at >= self.LOG_EVERY:
            self._logged_at = now
            logger.warning(
                "closing connections before their handshake: the last from %s (%d pending from it); so far %d "
                "evicted for newer ones (too many pending connections), %d sent nothing within the first-byte deadline",
                source,
                len(self._by_source.get(source, ())),
                self.evicted,
                self.silent,
            )


def peer_source(stream: trio.abc.Stream) -> str:
    """The source address a gate counts `stream` under: its peer's IP, UNIX_SOURCE for a Unix socket,
    "unknown" for a stream that is not a socket's."""
    sock = getattr(stream, "socket", None)  # a SocketStream's; other streams have none
    try:
        if sock is None:
            return "unknown"
        if sock.family == socket.AF_UNIX:
            return UNIX_SOURCE
        return str(sock.getpeername()[0])
    except (OSError, TypeError, ValueError, IndexError):
        return "unknown"


def _refuse_now(stream: trio.abc.Stream) -> None:
    """Tell `stream`'s peer PENDING_REFUSAL and close it, without waiting (what the socket's buffer
    takes now: an evicted peer is owed no more). What the peer sent is read first, as far as it has
    come: a socket closed with unread bytes resets the connection, and the peer would lose the reason."""
    sock = getattr(stream, "socket", None)
    if sock is None:
        return
    fd = sock.fileno()
    with contextlib.suppress(OSError):
        os.write(fd, REFUSAL_BYTES)
        for _ in range(_DRAIN_READS):
            if not os.read(fd, 65536):
                break
    sock.close()
