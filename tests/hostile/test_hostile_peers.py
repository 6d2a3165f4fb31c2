"""Random and adversarial frames, before and after authentication, against each service while a
steady client runs jobs: no frame stops a service, the steady client's tasks each get exactly one
outcome with the right value, and every attack ends with the attacker's connection closed. Every
test runs against a cluster of each security mode (peers.MODES): the shared secret, and TLS (where
the attacker holds a certificate of the cluster CA and sends its frames inside its TLS session; and
where it sends raw bytes to a TLS port, before any TLS handshake).

The attacks are drawn by hypothesis with a fixed budget (derandomized: the same examples every run,
so CI is reproducible; raise the budget locally with HOSTILE_EXAMPLES=1000). Frames sent inside an
authenticated TLS session reach the same framing and decoder as in the insecure mode, which draws the whole
budget; each of their examples costs TLS handshakes besides, so the TLS mode draws a quarter of it
(HOSTILE_TLS_EXAMPLES). Raw bytes sent to a TLS port before any TLS handshake reach the TLS handshake, which
only that mode has: that test draws the whole budget in both."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparrow_runtime.wire.messages import Challenge, Error, Registered, RegisterNodeMonitor

from .peers import MODES, LiveCluster, RawPeer

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "100"))
TLS_EXAMPLES = int(os.environ.get("HOSTILE_TLS_EXAMPLES", str(max(1, EXAMPLES // 4))))
ATTACK = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Fields of any shape a msgpack array may hold: extremes of every kind.
scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, -1, 1, 2**31, 2**31 - 1, -(2**31), 2**63 - 1, 2**40]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
    st.binary(max_size=300),
    st.booleans(),
    st.none(),
)
fields = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5), max_leaves=12)
tags = st.one_of(
    st.sampled_from(
        [
            1,
            2,
            3,
            4,
            10,
            11,
            12,
            13,
            14,
            15,
            20,
            21,
            22,
            23,
            24,
            25,
            26,
            27,
            28,
            29,
            30,
            31,
            33,
            34,
            37,
            50,
            51,
            52,
            53,
            54,
        ]
    ),
    st.integers(-5, 300),
)
arrays = st.builds(lambda tag, rest: [tag, *rest], tags, st.lists(fields, max_size=8))
length_prefixed = st.builds(
    lambda n, body: n.to_bytes(4, "big") + body, st.integers(0, 2**32 - 1), st.binary(max_size=64)
)
raw_bytes = st.one_of(st.binary(min_size=1, max_size=2000), length_prefixed)


class _Errors(logging.Handler):
    """Collects ERROR records: the services log one only when the catch-all of guard.py caught an
    exception, i.e. a hostile input reached code that did not expect it."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


@pytest.fixture(scope="module", params=MODES)
def cluster(request):
    errors = _Errors()
    logging.getLogger("sparrow_runtime").addHandler(errors)
    try:
        live = LiveCluster(request.param).start()
        yield live
        record = live.stop()
    finally:
        logging.getLogger("sparrow_runtime").removeHandler(errors)
    assert record.problems == []
    assert record.jobs >= 5 and record.values >= 80  # the steady client really ran throughout
    assert errors.records == []


def _attack(cluster: LiveCluster, body: Callable[..., None], **strategies: st.SearchStrategy) -> None:
    """Runs `body` on hypothesis's draws of `strategies`: ATTACK's budget in the insecure mode, TLS_EXAMPLES
    under TLS (the same frames, each example dearer: see the header)."""
    budget = EXAMPLES if cluster.mode == "insecure" else TLS_EXAMPLES
    settings(ATTACK, max_examples=budget)(given(**strategies)(body))()


def _closes(peer: RawPeer) -> list:
    """What the service answers before it closes the attacker's connection (it must close it)."""
    try:
        return peer.read_until_closed()
    except TimeoutError:
        pytest.fail("the service kept a hostile connection open")


def test_bytes_before_the_handshake(cluster):
    """Any bytes in place of the Authenticate (inside the TLS session under TLS): each service closes the link."""

    def attack(data):
        for address, role in ((cluster.scheduler, "client"), *((a, "scheduler") for a in cluster.node_monitors)):
            with cluster.peer(address, role) as peer:
                peer.receive_one()  # the Challenge
                peer.send_raw(data)
                peer.shutdown_write()  # (the handshake deadline is tested in tests/runtime)
                _closes(peer)
        assert cluster.scheduler_answers()

    _attack(cluster, attack, data=raw_bytes)


@ATTACK
@given(data=raw_bytes)
def test_raw_bytes_before_any_tls_handshake(cluster, data):
    """Bytes on plain TCP, whatever the service speaks: a TLS service fails its TLS handshake and closes
    (the bytes never reach the framing); either service lives on."""
    for address in (cluster.scheduler, *cluster.node_monitors):
        with RawPeer(address) as peer:
            peer.send_raw(data)
            peer.shutdown_write()
            try:
                while peer.sock.recv(65536):
                    pass
            except ConnectionResetError:
                pass
            except TimeoutError:
                pytest.fail("the service kept a hostile connection open")
    assert cluster.scheduler_answers()


def test_the_issues_frame_a_role_of_17_million_nul_characters(cluster):
    """The adversarial run's killer frame: an Authenticate whose role is 17,000,000 NULs. Refused at
    its length prefix (over 8 KiB before the handshake), answered with a short Error, and every
    service lives on."""
    body = msgspec.msgpack.encode([2, 3, "\0" * 17_000_000, "x", b"m" * 32, b"n" * 32])
    frame = len(body).to_bytes(4, "big") + body  # made before connecting: the handshake deadline runs meanwhile
    for address, role in ((cluster.scheduler, "client"), *((a, "scheduler") for a in cluster.node_monitors)):
        with cluster.peer(address, role) as peer:
            peer.receive_one()
            peer.send_raw(frame)
            answer = _closes(peer)
        assert [type(m) for m in answer] == [Error] and "exceeds the limit of 8192 bytes" in answer[0].reason
        assert len(answer[0].reason) < 300
    assert cluster.scheduler_answers()
    assert all(cluster.node_monitor_answers(a) for a in cluster.node_monitors)


def test_random_messages_from_an_authenticated_client(cluster):
    """Any messages from an authenticated client: the scheduler closes the link and goes on serving."""

    def attack(msgs):
        with cluster.peer(cluster.scheduler) as peer:
            peer.handshake("client")
            peer.send_arrays(msgs)
            peer.shutdown_write()  # whatever the scheduler makes of them, we are done
            _closes(peer)
        assert cluster.scheduler_answers()

    _attack(cluster, attack, msgs=st.lists(arrays, min_size=1, max_size=6))


def test_random_messages_from_an_authenticated_node_monitor(cluster):
    """A registration of any slots and labels, then any messages, from an authenticated node monitor: the
    scheduler closes the link and goes on serving."""

    def attack(slots, labels, msgs):
        with cluster.peer(cluster.scheduler, "node-monitor") as peer:
            peer.handshake("node-monitor", "hostile-nm")
            peer.send_arrays([[20, "hostile-nm", slots, labels, "instance"], *msgs])
            peer.shutdown_write()
            _closes(peer)
        assert cluster.scheduler_answers()

    _attack(
        cluster,
        attack,
        slots=st.integers(-3, 10_000),
        labels=st.lists(st.text(max_size=250), max_size=70),
        msgs=st.lists(arrays, max_size=6),
    )


def test_random_messages_from_an_authenticated_scheduler_to_a_node_monitor(cluster):
    """Any messages from an authenticated scheduler, once registered with: each node monitor closes the link
    and goes on serving."""

    def attack(msgs):
        for address in cluster.node_monitors:
            with cluster.peer(address, "scheduler") as peer:
                peer.handshake("scheduler", "hostile-scheduler")
                assert isinstance(peer.receive_one(), RegisterNodeMonitor)
                peer.send(Registered("hostile-scheduler"))
                peer.send_arrays(msgs)
                peer.shutdown_write()
                _closes(peer)
            assert cluster.node_monitor_answers(address)

    _attack(cluster, attack, msgs=st.lists(arrays, min_size=1, max_size=6))


def test_random_messages_on_a_steal_link_to_a_node_monitor(cluster):
    """An authenticated node monitor sends anything on a steal link (the cluster's node monitors steal): each
    victim answers or closes that link, takes back what it lent on it, and goes on serving."""

    def attack(msgs):
        for address in cluster.node_monitors:
            with cluster.peer(address, "node-monitor") as peer:
                peer.handshake("node-monitor", "hostile-thief")
                peer.send_arrays(msgs)
                peer.shutdown_write()
                _closes(peer)
            assert cluster.node_monitor_answers(address)

    _attack(cluster, attack, msgs=st.lists(arrays, min_size=1, max_size=6))


def test_raw_bytes_after_the_handshake(cluster):
    """Any bytes after an authenticated client's handshake: the scheduler closes the link and goes on serving."""

    def attack(junk):
        with cluster.peer(cluster.scheduler) as peer:
            peer.handshake("client")
            peer.send_raw(junk)
            peer.shutdown_write()
            _closes(peer)
        assert cluster.scheduler_answers()

    _attack(cluster, attack, junk=raw_bytes)


def test_connections_stuck_in_the_handshake_are_bounded_per_source_and_the_oldest_goes(cluster):
    """MAX_PENDING_PER_SOURCE connections from one address that never authenticate (each past its first
    byte: one byte of a frame header) are held; one more from that address is let in, and the oldest goes
    instead, told why where it can read it (plain text: an Error; inside TLS it cannot, and is closed).
    The service answers at once meanwhile."""
    from sparrow_runtime.wire.gate import PENDING_REFUSAL
    from sparrow_runtime.wire.limits import MAX_PENDING_PER_SOURCE

    idle = [cluster.peer(cluster.scheduler) for _ in range(MAX_PENDING_PER_SOURCE)]
    try:
        for peer in idle:
            assert isinstance(peer.receive_one(), Challenge)  # it is in the handshake now
            peer.send_raw(b"\0")
        with cluster.peer(cluster.scheduler) as newcomer:
            assert isinstance(newcomer.receive_one(), Challenge)
            evicted = idle[0].receive_one()
            if cluster.mode == "insecure":
                assert isinstance(evicted, Error) and evicted.reason == PENDING_REFUSAL
            else:
                assert evicted is None
        assert cluster.scheduler_answers()
    finally:
        for peer in idle:
            peer.sock.close()


def test_hostile_resources_in_registrations_and_reservations(cluster):
    """A registration naming thousands of resources, or units that are negative, huge, NaN or badly named;
    and reservations asking for a resource no node monitor offers, thousands of them, or negative units:
    each is refused and its link closed, and the services go on serving."""
    many = {f"r{i}": 1 for i in range(5000)}
    for capacity in (many, {"gpu": -1}, {"gpu": 2**60}, {"gpu": float("nan")}, {"Bad Name": 1}):
        with cluster.peer(cluster.scheduler, "node-monitor") as peer:
            peer.handshake("node-monitor", "hostile-nm")
            peer.send_arrays([[20, "hostile-nm", 1, [], "instance", False, "", "", capacity]])
            peer.shutdown_write()
            _closes(peer)
        assert cluster.scheduler_answers()
    for asked in ({"license": 1000}, many, {"gpu": -5}):
        for address in cluster.node_monitors:
            with cluster.peer(address, "scheduler") as peer:
                peer.handshake("scheduler", "hostile-scheduler")
                assert isinstance(peer.receive_one(), RegisterNodeMonitor)
                peer.send(Registered("hostile-scheduler"))
                peer.send_arrays([[23, 1, "u", 0, 1, "", False, asked]])
                peer.shutdown_write()
                _closes(peer)
            assert cluster.node_monitor_answers(address)
