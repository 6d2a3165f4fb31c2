"""Loopback TCP against a Unix domain socket between two processes of one host, in the same run: a
ping-pong of small messages (a frame-sized write and a blocking read each way, as one hop of the
runtime), alternating the two transports round by round, with the two processes on different CPUs
(as a node monitor and its scheduler) or on one.

asv: `Transport.track_unix_time_vs_tcp` (a Unix round trip's wall time over a TCP one's, lower is
better). Script: `python bench/bench_transport.py [--round-trips N] [--rounds N]` prints the wall and
CPU microseconds per round trip of each, median (range) over the rounds.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import time

ROUND_TRIPS = 5_000
ROUNDS = 5
MESSAGE = b"x" * 64  # about a GetTask / TaskToNode frame of a no-op task


def _pair(transport: str) -> tuple[socket.socket, socket.socket]:
    if transport == "unix":
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    for sock in (client, server):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, server


def _pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def ping_pong(transport: str, round_trips: int = ROUND_TRIPS, cpus: tuple[int | None, int | None] = (None, None)):
    """(wall us, CPU us of both processes) per round trip of MESSAGE over `transport` ("tcp" or "unix")."""
    near, far = _pair(transport)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pid = os.fork()
    if pid == 0:  # the echoing peer
        try:
            near.close()
            _pin(cpus[1])
            fd = far.fileno()
            for _ in range(round_trips + 1):
                os.write(fd, os.read(fd, 65536))
        finally:
            os._exit(0)
    far.close()
    _pin(cpus[0])
    fd = near.fileno()
    os.write(fd, MESSAGE)  # one unrecorded round trip: both sides are running
    os.read(fd, 65536)
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(round_trips):
        os.write(fd, MESSAGE)
        os.read(fd, 65536)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the peer's whole life: its set-up is small
    near.close()
    child = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return 1e6 * wall / round_trips, 1e6 * (cpu + child) / round_trips


def rounds(n: int = ROUNDS, round_trips: int = ROUND_TRIPS, cpus=(None, None)) -> dict[str, list[tuple[float, float]]]:
    """`n` rounds alternating TCP and Unix: per transport, (wall us, CPU us) per round trip of each."""
    out: dict[str, list[tuple[float, float]]] = {"tcp": [], "unix": []}
    for _ in range(n):
        for transport in ("tcp", "unix"):
            out[transport].append(ping_pong(transport, round_trips, cpus))
    return out


class Transport:
    """A Unix socket round trip against a loopback TCP one, both measured in the same run."""

    timeout = 120

    def track_unix_time_vs_tcp(self) -> float:
        runs = rounds(3, 2_000)
        return statistics.median(u[0] / t[0] for u, t in zip(runs["unix"], runs["tcp"], strict=True))

    track_unix_time_vs_tcp.unit = "ratio"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--round-trips", type=int, default=ROUND_TRIPS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    if min(args.round_trips, args.rounds) < 1:
        parser.error("--round-trips and --rounds must be >= 1")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    layouts = {"unpinned": (None, None)}
    if len(cpus) >= 2:
        layouts["two CPUs"] = (cpus[0], cpus[1])
    if cpus:
        layouts["one CPU"] = (cpus[0], cpus[0])
    print(
        f"{args.round_trips:,} round trips of {len(MESSAGE)} bytes, {args.rounds} rounds alternating; "
        f"median (range) per round trip; load average {os.getloadavg()[0]:.2f}"
    )
    for name, layout in layouts.items():
        runs = rounds(args.rounds, args.round_trips, layout)
        cells = []
        for transport, figures in runs.items():
            walls, cpu = [f[0] for f in figures], [f[1] for f in figures]
            cells.append(
                f"{transport} {statistics.median(walls):.1f} us ({min(walls):.1f}-{max(walls):.1f}), "
                f"CPU {statistics.median(cpu):.1f} us"
            )
        ratio = [u[0] / t[0] for u, t in zip(runs["unix"], runs["tcp"], strict=True)]
        print(
            f"  {name:<9} {'; '.join(cells)}; unix/tcp wall {statistics.median(ratio):.2f}x "
            f"({min(ratio):.2f}-{max(ratio):.2f})"
        )


if __name__ == "__main__":
    main()
