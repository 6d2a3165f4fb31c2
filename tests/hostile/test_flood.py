"""A stranger without a certificate floods a real cluster (processes, TLS) with idle and slow (byte-by-byte)
connections from one address: a client with a valid certificate still connects and runs a job within 1 s of
trying, each time, and a node monitor restarted under its id registers again as fast as without the flood
(within 1 s more). Each listener has its own gate (gate.py): a source holds at most MAX_PENDING_PER_SOURCE
places, the oldest pending connection goes when a newcomer needs room, and a connection that sends nothing
goes after handshake.FIRST_BYTE_TIMEOUT. The same flood against the node monitors' data listeners delays no
fetch of a kept value."""

from __future__ import annotations

import collections
import logging
import socket
import sys
import threading
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.wire.address import parse_address
from sparrow_runtime.wire.certs import local_certs

from ..node_monitor_process import kill, start_node_monitor, stop
from ..runtime.services.test_services import SECRET, services

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="floods from 127.0.0.2: Linux loopback")

STRANGER = "127.0.0.2"  # the flood's source: another address of the loopback network (the peers' is 127.0.0.1)
RATE = 40.0  # new connections per second, half idle, half sending one byte every SLOW_EVERY seconds
SLOW_EVERY = 0.25
DATA_RATE = 150.0  # against the data listeners: a fetch redials at once, so the flood must take every freed place
HELD = 2000  # connections the flood keeps open at most (the oldest closed first)
BIG = 200_000  # bytes: over the node monitors' default inline limit


# What a slow connection sends, a byte every SLOW_EVERY seconds: the start of a message the service then waits
# to read whole (a TLS record of 512 bytes holding a ClientHello; a frame of 256 bytes), so it holds its place
TLS_DRIP = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(501)
FRAME_DRIP = b"\x00\x00\x01\x00" + bytes(256)


class Flood:
    """Opens `rate` connections a second to each of `targets` from STRANGER on a thread, until `stop()`: every
    other one idle, the others sending `drip` a byte at a time (a slow handshake)."""

    def __init__(self, targets: list[tuple[str, int]], rate: float = RATE, drip: bytes = TLS_DRIP) -> None:
        self.targets = targets
        self.rate = rate
        self.drip = drip
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flood", daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        held: collections.deque[socket.socket] = collections.deque()
        slow: dict[socket.socket, int] = {}  # -> bytes of the drip sent
        next_open = next_drip = time.monotonic()
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= next_open:
                    next_open += 1 / self.rate
                    for target in self.targets:
                        sock = self._open(target)
                        if sock is not None:
                            held.append(sock)
                            if self.opened % 2:
                                slow[sock] = 0
                    while len(held) > HELD:
                        held.popleft().close()
                if now >= next_drip:
                    next_drip += SLOW_EVERY
                    for sock, sent in list(slow.items()):
                        try:
                            sock.send(self.drip[sent : sent + 1])
                            slow[sock] = (sent + 1) % len(self.drip)
                        except OSError:
                            del slow[sock]
                time.sleep(max(0.0, min(next_open, next_drip) - time.monotonic()))
        finally:
            for sock in held:
                sock.close()

    def _open(self, target: tuple[str, int]) -> socket.socket | None:
        sock = socket.socket()
        sock.settimeout(0.2)
        try:
            sock.bind((STRANGER, 0))
            sock.connect(target)
        except OSError:
            sock.close()
            return None
        self.opened += 1
        return sock


def _double(x: int) -> int:
    return 2 * x


def _blob(extra: int) -> bytes:
    """A value over the node monitors' inline limit: kept where it was made, fetched from its data listener."""
    return b"v" * (BIG + extra)


async def _one_job(scheduler: str, tls) -> float:
    """Seconds from trying to connect to a job's outcomes, for a new client."""
    start = time.monotonic()
    async with Client([scheduler], tls=tls) as client:
        job = await client.submit_job([partial(_double, i) for i in range(4)])
        assert [o.value for o in await job.outcomes()] == [0, 2, 4, 6]
    return time.monotonic() - start


@pytest.mark.slow
def test_a_flood_of_idle_and_slow_connections_locks_no_one_out(tmp_path):
    """From another address than the peers', the flood only ever evicts its own connections (on TCP: the gate
    tells peers apart by their address)."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"),
        schedulers=1,
        node_monitors=1,
        slots=1,
        tls=tmp_path / "tls",
        transport="tcp",
    ) as cluster:
        files = local_certs(tmp_path / "tls", "unused")  # the files the cluster made (remade only if unusable)
        restart = partial(start_node_monitor, cluster.schedulers, files["node-monitor"], cluster.node_ids[0])
        targets = [parse_address(cluster.schedulers[0]), parse_address(cluster.node_monitors[0])]
        trio.run(_one_job, cluster.schedulers[0], cluster.client_tls)  # warm: imports, the first job
        # a node monitor restarted without a flood: the time it takes to start and register
        kill(cluster.node_monitor_pids[0])
        time.sleep(1.0)  # the scheduler saw the link end
        quiet, quiet_seconds = restart()
        try:
            with Flood(targets) as flood:
                time.sleep(3.0)  # past the handshake deadline: main's gate held its 64 places from here on
                seconds = [trio.run(_one_job, cluster.schedulers[0], cluster.client_tls) for _ in range(5)]
                stop(quiet)
                time.sleep(1.0)
                flooded, flooded_seconds = restart()
                try:
                    seconds.append(trio.run(_one_job, cluster.schedulers[0], cluster.client_tls))
                finally:
                    stop(flooded)
                assert flood.opened >= RATE * 3
        finally:
            stop(quiet)
    assert max(seconds) < 1.0, seconds
    assert flooded_seconds < quiet_seconds + 1.0, (flooded_seconds, quiet_seconds)


def test_a_flood_against_the_data_listeners_delays_no_fetch(caplog):
    """The same flood against both node monitors' data listeners (in-process services, loopback TCP): a new
    client still fetches a value kept where it was made (its data links new too) within 1 s, each time, and
    never takes it for lost (a refused fetch would: the value made again by its task)."""

    async def fetch(address: str, i: int) -> float:
        start = trio.current_time()
        async with Client([address], secret=SECRET) as client:
            job = await client.submit_job([partial(_blob, 10 * i + k) for k in range(2)])
            assert [len(v) for v in await job.results()] == [BIG + 10 * i + k for k in range(2)]
        return trio.current_time() - start

    async def main():
        async with services(n_nodes=2) as (address, _, nodes):
            await fetch(address, 0)  # warm: imports, the first job
            targets = [parse_address(node.holder[1]) for node in nodes]
            with Flood(targets, rate=DATA_RATE, drip=FRAME_DRIP) as flood:
                await trio.sleep(3.0)  # past the handshake deadline: main's gate held its 64 places from here
                seconds = [await fetch(address, i) for i in range(1, 6)]
                assert flood.opened >= DATA_RATE * 3
        assert max(seconds) < 1.0, seconds

    with caplog.at_level(logging.WARNING, "sparrow_runtime"):
        trio.run(main)
    assert not [r.getMessage() for r in caplog.records if "is lost" in r.getMessage()]
