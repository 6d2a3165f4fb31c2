"""A live cluster to attack, and a blocking peer to attack it with, in either security mode.

`LiveCluster(mode)` runs a scheduler and two node monitors (thread executors, work stealing, short handshake
timeout) in a trio loop on a background thread, plus a steady client in the same loop that submits
jobs all the time and checks every outcome: right values, exactly one outcome per task, and only
system failures (a hostile node monitor that took a task and vanished) as failures. MODES: "insecure"
(the shared secret) or "tls" (every link on TLS, certificates of a CA made for the cluster).
`RawPeer` is an attacker on a blocking socket, plain or (with `tls`) inside a TLS session of a
certificate of the cluster CA: it can speak the handshake as any role (it knows the secret; under
TLS, as the role of its certificate: `LiveCluster.peer`) or not, and send any bytes it likes.
`Credentials(mode)` is what each peer authenticates with, for tests that start services themselves.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec
import trio

from sparrow_runtime import (
    Client,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    TaskFailed,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.wire import auth, certs
from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.messages import PROTOCOL_VERSION, Authenticate, Challenge, StatusReply, StatusRequest, Welcome
from sparrow_runtime.wire.tls import TLS

SECRET = b"hostile-suite-secret"
# The services' handshake deadline. It covers the TLS handshake too, which here runs in one process with
# the attacker's blocking TLS handshake and the steady client: at 0.5 s it was missed at load 12-18 on 2
# cores ("handshake not completed within 0.5 s", then the attacker saw no Challenge). No test waits for it
# to pass: an attack ends with the attacker's FIN, a stuck peer with its close.
HANDSHAKE_TIMEOUT = 5.0
MODES = ("insecure", "tls")
# the certificate (name, role) of each peer of a "tls" cluster: its services, its steady client, and
# an attacker per role it may claim
TLS_PEERS = {
    "scheduler": ("scheduler", "scheduler"),
    "nm0": ("nm0", "node-monitor"),
    "nm1": ("nm1", "node-monitor"),
    "steady": ("steady", "client"),
    "attacker-client": ("attacker-client", "client"),
    "attacker-node-monitor": ("attacker-node-monitor", "node-monitor"),
    "attacker-scheduler": ("attacker-scheduler", "scheduler"),
}


@dataclass
class SteadyRecord:
    jobs: int = 0
    values: int = 0
    system_failures: int = 0
    problems: list[str] = field(default_factory=list)


class Credentials:
    """What each peer of TLS_PEERS authenticates with in `mode`: the shared secret, or (for "tls") its
    own certificate of a CA made for these credentials (in a temporary folder, until `cleanup()`)."""

    def __init__(self, mode: str = "insecure") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self._folder: tempfile.TemporaryDirectory | None = None
        self._tls: dict[str, TLS] = {}
        if mode == "tls":
            self._folder = tempfile.TemporaryDirectory(prefix="sparrow-hostile-tls-")
            folder = Path(self._folder.name)
            certs.init_ca(folder)
            for name, role in TLS_PEERS.values():
                certs.issue(folder, name, role)
                self._tls[name] = TLS(folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem")

    def of(self, name: str) -> dict:
        """The `secret=` or `tls=` keyword of the peer `name` (a key of TLS_PEERS)."""
        return {"secret": SECRET} if self.mode == "insecure" else {"tls": self._tls[name]}

    def flags(self, name: str) -> list[str]:
        """The `--tls-*` flags of the service `name` (none in the insecure mode: see `env`)."""
        tls = self._tls.get(name)
        return [] if tls is None else ["--tls-ca", tls.ca, "--tls-cert", tls.cert, "--tls-key", tls.key]

    def peer(self, address: tuple[str, int], role: str = "client", timeout: float = 5.0) -> RawPeer:
        """An attacker at `address` that may claim `role` (under TLS: holding a certificate of that role)."""
        return RawPeer(address, timeout, tls=self._tls.get(f"attacker-{role}"))

    def cleanup(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()


def serving(mode: str, *, values: int = 0, task_seconds: float = 0.0):
    """The body of a module fixture: a started LiveCluster (its steady client's tasks each taking `task_seconds`);
    after the module, the steady client's record must show no problem, at least 5 jobs and at least `values` values
    (it really ran throughout)."""
    live = LiveCluster(mode, task_seconds=task_seconds).start()
    yield live
    deadline = time.monotonic() + 10  # a module run in part may end before the steady client got that far
    while (live.record.jobs < 5 or live.record.values < values) and time.monotonic() < deadline:
        time.sleep(0.01)
    record = live.stop()
    assert record.problems == []
    assert record.jobs >= 5 and record.values >= values, record


def _times_three(value: int, seconds: float) -> int:
    """The steady client's task: `value` x 3, after `seconds` (LiveCluster's task_seconds)."""
    if seconds:
        time.sleep(seconds)
    return value * 3


class LiveCluster:
    """Services and a steady client in a trio loop on a thread; `stop()` ends them and returns the
    steady client's record. The steady client's tasks take `task_seconds` each (0: a multiplication alone; a
    module that needs its jobs in flight most of the time sets a few ms: a job of no-op tasks ends in about 1 ms,
    bound whole to one node monitor)."""

    def __init__(self, mode: str = "insecure", *, task_seconds: float = 0.0) -> None:
        self.mode = mode
        self.task_seconds = task_seconds
        self.creds = Credentials(mode)
        self.credentials, self.peer = self.creds.of, self.creds.peer
        self.scheduler: tuple[str, int] | None = None
        self.node_monitors: list[tuple[str, int]] = []
        self.record = SteadyRecord()
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="hostile-cluster", daemon=True)

    def start(self) -> LiveCluster:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the cluster did not start: {self._error!r}")
        return self

    def stop(self) -> SteadyRecord:
        self._token.run_sync_soon(self._stop.set)
        self._thread.join(30)
        self.creds.cleanup()
        if self._error is not None:
            raise self._error
        return self.record

    def scheduler_answers(self) -> bool:
        """Whether a fresh client gets a StatusReply from the scheduler (it is alive)."""
        with self.peer(self.scheduler) as peer:
            peer.handshake("client", "prober")
            peer.send(StatusRequest())
            return isinstance(peer.receive_one(), StatusReply)

    def node_monitor_answers(self, address: tuple[str, int]) -> bool:
        """Whether the node monitor at `address` still runs the handshake (it is alive)."""
        with self.peer(address, "scheduler") as peer:
            return isinstance(peer.receive_one(), Challenge)

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        common = dict(handshake_timeout=HANDSHAKE_TIMEOUT)
        async with trio.open_nursery() as nursery:
            self.scheduler = await nursery.start(
                partial(
                    serve_scheduler,
                    SchedulerConfig(link=LinkConfig(**common, **self.credentials("scheduler")), node_timeout=5.0),
                )
            )
            for i in range(2):
                node = NodeMonitorConfig(
                    link=LinkConfig(**common, **self.credentials(f"nm{i}")),
                    schedulers=[self.scheduler],
                    node_id=f"nm{i}",
                    slots=2,
                    executor="thread",
                    steal=True,
                )
                address = await nursery.start(serve_node_monitor, node)
                self.node_monitors.append(address)
            nursery.start_soon(self._steady_client)
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    async def _steady_client(self) -> None:
        record = self.record
        async with Client([self.scheduler], **self.credentials("steady")) as client:
            while True:
                base = record.jobs * 100
                job = await client.submit_job([partial(_times_three, base + i, self.task_seconds) for i in range(20)])
                for outcome in await job.outcomes():
                    if outcome.ok:
                        if outcome.value != (base + outcome.index) * 3:
                            record.problems.append(
                                f"job {record.jobs} task {outcome.index}: wrong value {outcome.value!r}"
                            )
                        record.values += 1
                    elif isinstance(outcome.exception, TaskFailed) and "was lost" in str(outcome.exception):
                        record.system_failures += 1
                    else:
                        record.problems.append(f"job {record.jobs} task {outcome.index}: {outcome.exception!r}")
                record.jobs += 1
                await trio.sleep(0.005)


class RawPeer:
    """A blocking TCP peer that sends whatever it is told to (for attacks); with `tls`, inside a TLS
    session of that certificate (the TLS handshake done here)."""

    def __init__(self, address: tuple[str, int], timeout: float = 5.0, tls: TLS | None = None) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.tls = tls
        if tls is not None:
            self.sock = tls.client_context().wrap_socket(self.sock)
        self.decoder = FrameDecoder(64 * 1024 * 1024)
        self.pending: list = []  # received, not yet returned

    def receive_one(self):
        batch = self.receive()
        if not batch:
            return None
        msg, self.pending = batch[0], batch[1:]
        return msg

    def __enter__(self) -> RawPeer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.sock.close()

    def shutdown_write(self) -> None:
        """Send end of file (TCP FIN), still reading what comes (under TLS too: no close_notify)."""
        socket.socket.shutdown(self.sock, socket.SHUT_WR)

    def send_raw(self, data: bytes) -> None:
        with contextlib.suppress(OSError):  # the service closed on us mid-send: a valid answer to an attack
            self.sock.sendall(data)

    def send(self, *msgs) -> None:
        self.send_raw(bytes(encode_frames(list(msgs))))

    def send_arrays(self, arrays: list) -> None:
        """Frames of raw msgpack arrays (any tag, any fields, valid or not)."""
        data = bytearray()
        for array in arrays:
            body = msgspec.msgpack.encode(array)
            data += len(body).to_bytes(4, "big") + body
        self.send_raw(bytes(data))

    def receive(self) -> list:
        """The next batch of messages (empty once the service closed the connection)."""
        if self.pending:
            batch, self.pending = self.pending, []
            return batch
        while True:
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):  # under TLS: an unexpected EOF is a close too
                return []
            if not data:
                return []
            msgs = self.decoder.feed(data)
            if msgs:
                return msgs

    def read_until_closed(self) -> list:
        """Everything the service sends until it closes the connection (socket.timeout if it does not)."""
        got = []
        while batch := self.receive():
            got += batch
        return got

    def handshake(self, role: str, peer_id: str = "attacker", max_frame: int = 0) -> Challenge:
        """Authenticate as `role` with the cluster secret, telling `max_frame` (0: not told)."""
        challenge, welcome = self.authenticate(role, peer_id, max_frame)
        assert isinstance(welcome, Welcome), welcome
        return challenge

    def authenticate(self, role: str, peer_id: str, max_frame: int = 0) -> tuple[Challenge, object]:
        """Read the Challenge and answer it as `role` with the cluster secret, telling `max_frame`: the
        Challenge and the service's reply (Welcome, or Error)."""
        challenge = self.receive_one()
        assert isinstance(challenge, Challenge), challenge
        nonce = auth.new_nonce()
        mac = b""  # under TLS the certificate proves the peer
        if self.tls is None:
            mac = auth.proof(
                SECRET, "client", challenge.nonce, PROTOCOL_VERSION, role, peer_id, challenge.role, challenge.peer_id
            )
        self.send(Authenticate(PROTOCOL_VERSION, role, peer_id, mac, nonce, max_frame))
        return challenge, self.receive_one()
