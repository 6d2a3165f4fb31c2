"""A man in the middle on loopback for the trust tests: a TCP proxy that records every byte it relays
and, once, injects, rewrites or takes over a session, as an on-path attacker without any key would."""

from __future__ import annotations

import trio

from sparrow_runtime.wire.framing import DEFAULT_MAX_FRAME, encode_frames

UP, DOWN = "up", "down"  # toward the service dialed, toward the peer that dialed the proxy


class Proxy:
    """Relays connections to `target`. `attack` (optional, on the first connection only, the first
    chunk `after` seconds into it): "inject" sends `frames` (messages) toward the service after a
    chunk going up; "flip-up" / "flip-down" flip one byte of a chunk; "takeover" keeps the link to the
    service open once the peer is gone, and sends it the bytes the peer sent (a replay), then `frames`."""

    def __init__(self, target, attack: str | None = None, *, after: float = 0.3, frames: list = ()) -> None:
        self.target = target
        self.attack = attack
        self.after = after
        self.frames = list(frames)
        self.relayed = {UP: bytearray(), DOWN: bytearray()}
        self.connections = 0
        self.attacked = trio.Event()

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(listeners[0].socket.getsockname()[:2])

    async def _handle(self, peer: trio.SocketStream) -> None:
        self.connections += 1
        first = self.connections == 1 and self.attack is not None
        try:
            service = await trio.open_tcp_stream(*self.target)
        except OSError:
            await peer.aclose()
            return
        opened = trio.current_time()
        sent_up = bytearray()  # this connection's bytes toward the service, for a replay
        async with service, peer, trio.open_nursery() as nursery:

            async def pump(source, sink, direction) -> None:
                while True:
                    try:
                        chunk = await source.receive_some(65536)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        chunk = b""
                    if not chunk:
                        if first and self.attack == "takeover" and direction == UP:
                            await self._take_over(service, bytes(sent_up))
                        nursery.cancel_scope.cancel()
                        return
                    self.relayed[direction] += chunk
                    if direction == UP:
                        sent_up.extend(chunk)
                    extra = b""
                    ripe = first and not self.attacked.is_set() and trio.current_time() - opened >= self.after
                    if ripe and self.attack == f"flip-{direction}":
                        chunk = bytearray(chunk)
                        chunk[len(chunk) // 2] ^= 0x20
                        chunk = bytes(chunk)
                        self.attacked.set()
                    elif ripe and self.attack == "inject" and direction == UP:
                        extra = encode_frames(self.frames, DEFAULT_MAX_FRAME)
                        self.attacked.set()
                    try:
                        await sink.send_all(chunk + extra)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        if not (first and self.attack == "takeover"):  # there, the service's answers are dropped
                            nursery.cancel_scope.cancel()
                            return

            nursery.start_soon(pump, peer, service, UP)
            nursery.start_soon(pump, service, peer, DOWN)

    async def _take_over(self, service: trio.SocketStream, sent: bytes) -> None:
        """The peer is gone: speak for it on its still-open link (on TLS, replay its last record
        first), then wait for the service's answer."""
        self.attacked.set()
        try:
            await service.send_all(last_tls_record(sent) + encode_frames(self.frames, DEFAULT_MAX_FRAME))
            await trio.sleep(2)  # the service answers (or drops the link) meanwhile
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


def last_tls_record(data: bytes) -> bytes:
    """The last TLS application-data record in `data` (a TLS client's bytes), b"" if it is not TLS."""
    last, at = b"", 0
    if not data.startswith(b"\x16\x03"):
        return last
    while at + 5 <= len(data):
        size = int.from_bytes(data[at + 3 : at + 5], "big")
        if data[at] == 23:
            last = data[at : at + 5 + size]
        at += 5 + size
    return last
