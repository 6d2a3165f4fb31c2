"""What TLS costs: no-op tasks through a LocalCluster on TLS and on the insecure shared-secret
mode in the same run, alternating (plaintext, TLS, plaintext, ...) so a shared machine's noise hits
both; new connections per second a scheduler accepts (TCP connect + handshake, then close, one at a
time) on each; and, in one process, what a message round trip costs on a plain socket (the connection's
direct-write fast path), on a socket behind a pass-through stream (the sender task and receive_some,
no crypto), on TLS as the connections run it (tls_channel: records made into one buffer, the same
direct writes), on that TLS code path with the crypto taken out (a channel that copies: what the
path itself costs), and on TLS under trio.SSLStream (the sender task path, which TLS took before);
then what one small record costs to encrypt and decrypt in a tight loop (warm caches), and what one
mutual TLS handshake costs in memory (both ends in this process, no sockets: the CPU a scheduler
spends per new connection on the TLS layer alone).

asv: `track_tls_over_plaintext_throughput` and `track_tls_over_plaintext_p50` (ratios in one run),
`track_handshakes_per_second` (TLS). Script: `python bench/bench_tls.py [--executor process|thread]
[--repeat N] [--tasks N] [--jobs N]`. Targets: throughput ratio >= 0.85, p50 ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import os
import ssl
import tempfile
import time
from functools import partial

try:
    from bench import bench_runtime as runtime
    from bench.cluster_options import cluster_options
except ModuleNotFoundError:  # run as `python bench/bench_tls.py`
    import bench_runtime as runtime
    from cluster_options import cluster_options

import trio

from sparrow_runtime.wire.link_config import LinkConfig

try:
    from sparrow_runtime import LocalCluster
    from sparrow_runtime.wire.address import parse_address
    from sparrow_runtime.wire.certs import local_certs
    from sparrow_runtime.wire.connection import Connection
    from sparrow_runtime.wire.framing import encode_frames
    from sparrow_runtime.wire.handshake import connect
    from sparrow_runtime.wire.messages import Heartbeat
    from sparrow_runtime.wire.tls import TLS, start_tls
    from sparrow_runtime.wire.tls_channel import TLSChannel
except ImportError:  # the suite imports with any version of the package, one without TLS too
    LocalCluster = None

HANDSHAKE_SECONDS = 2.0
ROUND_TRIPS = 3000


def run_once(tls: bool, executor: str, n_tasks: int, n_jobs: int) -> tuple[float, float, float, float]:
    """(tasks/s, p50 ms, p99 ms, new connections/s) on a fresh cluster, on TLS or not."""
    with LocalCluster(schedulers=1, node_monitors=2, slots=1, tls=tls, **cluster_options(executor)) as cluster:
        credentials = cluster.credentials
        rate = trio.run(runtime.measure_throughput, cluster.schedulers, credentials, n_tasks)
        lat = trio.run(runtime.measure_latencies, cluster.schedulers, credentials, n_jobs)
        handshakes = trio.run(connections_per_second, cluster.schedulers[0], credentials)
    return rate, 1e3 * runtime.percentile(lat, 0.5), 1e3 * runtime.percentile(lat, 0.99), handshakes


async def connections_per_second(address: str, credentials: dict, seconds: float = HANDSHAKE_SECONDS) -> float:
    """Connections opened, authenticated (handshake) and closed per second, one at a time, for `seconds`."""
    target = parse_address(address)
    secret = credentials.get("secret")
    secret = secret.encode() if isinstance(secret, str) else secret
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        conn = await connect(
            target, link=LinkConfig(secret=secret, tls=credentials.get("tls")), role="client", peer_id="bench"
        )
        await conn.aclose()
        n += 1
    return n / (time.perf_counter() - start)


class _PassThrough(trio.abc.Stream):
    """A socket stream behind a wrapper: the connection cannot use its fast path (direct writes)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def send_all(self, data) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _NoCrypto:
    """TLSChannel's interface without the crypto (bytes out as they came in): the TLS code path alone."""

    buffered = False
    has_output = False

    def encrypt(self, data) -> bytes:
        return bytes(data)

    def decrypt(self, data) -> bytes:
        return data


ROUND_TRIP_KINDS = ("direct", "sender task", "tls", "tls, no crypto", "trio.SSLStream")


async def _wrap(kind: str, stream, tls, server_side: bool) -> Connection:
    """A Connection over `stream` as `kind` runs it (see ROUND_TRIP_KINDS)."""
    if kind == "tls":
        channel = await start_tls(stream, tls, server_side=server_side)
        return Connection(stream, handshake=False, tls=channel)
    if kind == "tls, no crypto":
        return Connection(stream, handshake=False, tls=_NoCrypto())  # type: ignore[arg-type]  # the same interface
    if kind == "trio.SSLStream":
        ctx = tls.server_context() if server_side else tls.client_context()
        stream = trio.SSLStream(stream, ctx, server_side=server_side)
    elif kind == "sender task":
        stream = _PassThrough(stream)
    return Connection(stream, handshake=False)


async def round_trip_us(kind: str, n: int = ROUND_TRIPS) -> float:
    """Microseconds per Heartbeat echoed over loopback between two Connections in this process, on a
    plain socket ("direct"), a wrapped one ("sender task"), TLS ("tls") or TLS under trio.SSLStream."""
    done = trio.Event()
    with tempfile.TemporaryDirectory() as folder:
        files = local_certs(folder, "bench")
        server_tls, client_tls = TLS(*files["scheduler"]), TLS(*files["client"])

    async def echo(stream) -> None:
        conn = await _wrap(kind, stream, server_tls, True)
        await conn.serve(lambda msgs: conn.send_many(msgs))

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, echo, 0, host="127.0.0.1"))
        stream = await trio.open_tcp_stream(*listeners[0].socket.getsockname()[:2])
        conn = await _wrap(kind, stream, client_tls, False)
        replies = 0
        start = 0.0

        def on_messages(msgs: list) -> None:
            nonlocal replies
            replies += len(msgs)
            if replies < n:
                conn.send(Heartbeat())
            else:
                done.set()

        async def drive() -> None:
            nonlocal start
            start = time.perf_counter()
            conn.send(Heartbeat())
            await done.wait()
            conn.close_soon()

        nursery.start_soon(drive)
        await conn.serve(on_messages)
        elapsed = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return 1e6 * elapsed / n


def _contexts(folder: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A client's and a server's ssl context of a fresh CA made in `folder`."""
    files = local_certs(folder, "bench")
    return TLS(*files["client"]).client_context(), TLS(*files["scheduler"]).server_context()


def _handshake_in_memory(client: TLSChannel, server: TLSChannel) -> float:
    """Both ends' TLS handshake, bytes passed between their BIOs (no socket, no event loop); returns
    the CPU seconds the server's steps took."""
    done = [False, False]
    server_cpu = 0.0
    while not all(done):
        for i, (side, other) in enumerate(((client, server), (server, client))):
            start = time.process_time()
            try:
                side._ssl.do_handshake()
                done[i] = True
            except ssl.SSLWantReadError:
                pass
            if side is server:
                server_cpu += time.process_time() - start
            if side.has_output:
                other._incoming.write(side.output())
    return server_cpu


def record_us(n: int = 20000) -> float:
    """Microseconds to encrypt one small message (a Heartbeat's frame) and decrypt it, in a loop."""
    with tempfile.TemporaryDirectory() as folder:
        client_ctx, server_ctx = _contexts(folder)
    client, server = TLSChannel(client_ctx, server_side=False), TLSChannel(server_ctx, server_side=True)
    _handshake_in_memory(client, server)
    frame = bytes(encode_frames([Heartbeat()]))
    if server.decrypt(client.encrypt(frame)) != frame:
        raise RuntimeError("a record did not come back as it was sent: the TLS session is not established")
    start = time.perf_counter()
    for _ in range(n):
        server.decrypt(client.encrypt(frame))
    return 1e6 * (time.perf_counter() - start) / n


def handshake_ms(n: int = 50) -> tuple[float, float]:
    """Milliseconds of CPU for one mutual TLS handshake in this process: both ends, and the server's part."""
    with tempfile.TemporaryDirectory() as folder:
        client_ctx, server_ctx = _contexts(folder)
    server_cpu = 0.0
    start = time.process_time()
    for _ in range(n):
        server_cpu += _handshake_in_memory(
            TLSChannel(client_ctx, server_side=False), TLSChannel(server_ctx, server_side=True)
        )
    return 1e3 * (time.process_time() - start) / n, 1e3 * server_cpu / n


class RuntimeTLS:
    """No-op tasks on TLS against the shared-secret mode, one cluster of each per run (thread executors)."""

    timeout = 300
    number = 1
    repeat = 1

    def setup_cache(self) -> dict[str, float | str]:
        if LocalCluster is None:
            return {"unavailable": "sparrow_runtime has no TLS"}
        plain = run_once(False, "thread", runtime.THROUGHPUT_TASKS, runtime.LATENCY_JOBS)
        tls = run_once(True, "thread", runtime.THROUGHPUT_TASKS, runtime.LATENCY_JOBS)
        return {"throughput": tls[0] / plain[0], "p50": tls[1] / plain[1], "handshakes": tls[3]}

    def setup(self, figures) -> None:
        if "unavailable" in figures:
            raise NotImplementedError(figures["unavailable"])

    def track_tls_over_plaintext_throughput(self, figures) -> float:
        return figures["throughput"]

    track_tls_over_plaintext_throughput.unit = "ratio"

    def track_tls_over_plaintext_p50(self, figures) -> float:
        return figures["p50"]

    track_tls_over_plaintext_p50.unit = "ratio"

    def track_handshakes_per_second(self, figures) -> float:
        return figures["handshakes"]

    track_handshakes_per_second.unit = "connections/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executor", choices=("process", "thread"), default="process")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=runtime.THROUGHPUT_TASKS)
    parser.add_argument("--jobs", type=int, default=runtime.LATENCY_JOBS)
    args = parser.parse_args()
    print(
        f"{args.executor} executors, {args.tasks} tasks, {args.jobs} jobs, {args.repeat} runs of each, "
        f"alternating; load average before: {os.getloadavg()[0]:.1f}"
    )
    runs: dict[bool, list] = {False: [], True: []}
    for _ in range(args.repeat):
        for tls in (False, True):
            runs[tls].append(run_once(tls, args.executor, args.tasks, args.jobs))
            r = runs[tls][-1]
            print(
                f"  {'TLS  ' if tls else 'plain'}: {r[0]:8.0f} tasks/s  p50 {r[1]:6.2f} ms  p99 {r[2]:6.2f} ms  "
                f"{r[3]:6.0f} connections/s"
            )
    for i, name in ((0, "throughput"), (1, "p50"), (2, "p99"), (3, "connections/s")):
        ratios = sorted(t[i] / p[i] for p, t in zip(runs[False], runs[True], strict=True))
        print(f"TLS / plaintext {name}: {ratios[len(ratios) // 2]:.2f} (range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    times: dict[str, list[float]] = {kind: [] for kind in ROUND_TRIP_KINDS}
    for _ in range(args.repeat):  # alternating kinds, so the machine's load hits each alike
        for kind in ROUND_TRIP_KINDS:
            times[kind].append(trio.run(round_trip_us, kind))
    for kind, t in times.items():
        t.sort()
        print(f"round trip, {kind:>14}: {t[len(t) // 2]:6.1f} us (range {t[0]:.1f}-{t[-1]:.1f})")
    best = {kind: t[0] for kind, t in times.items()}  # the fastest run of each: a loaded machine only adds
    records = sorted(record_us() for _ in range(args.repeat))
    print(
        f"TLS adds {best['tls'] - best['direct']:.1f} us per round trip (fastest runs): its code path without the "
        f"crypto {best['tls, no crypto'] - best['direct']:.1f} us, the crypto (2 records made and read) "
        f"{best['tls'] - best['tls, no crypto']:.1f} us; one small record made and read in a tight loop: "
        f"{records[len(records) // 2]:.1f} us (range {records[0]:.1f}-{records[-1]:.1f})"
    )
    shakes = sorted(handshake_ms() for _ in range(args.repeat))
    both, server = shakes[len(shakes) // 2]
    print(
        f"one mutual TLS handshake in memory: {both:.2f} ms of CPU for both ends, {server:.2f} ms the server's "
        f"(ranges {shakes[0][0]:.2f}-{shakes[-1][0]:.2f}): at most {1e3 / server:.0f} new TLS connections per "
        "second per scheduler core on the TLS layer alone"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f} (a shared machine: compare ratios, not absolute figures)")


if __name__ == "__main__":
    main()
