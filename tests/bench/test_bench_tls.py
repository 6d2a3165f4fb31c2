"""bench/bench_tls.py's in-process figures: every round-trip kind echoes its messages to the end (the
copying channel keeps TLSChannel's interface, so the split of TLS's cost stays measurable), and the
record and handshake figures come from real TLS sessions. What they measure is not asserted."""

from __future__ import annotations

import pytest
import trio

from bench import bench_tls


@pytest.mark.parametrize("kind", bench_tls.ROUND_TRIP_KINDS)
def test_every_round_trip_kind_echoes_its_messages_to_the_end(kind):
    """round_trip_us drives 50 Heartbeats through a pair of Connections of `kind` and returns a time."""
    assert trio.run(bench_tls.round_trip_us, kind, 50) > 0


def test_the_record_and_handshake_figures_come_from_completed_tls_sessions():
    """record_us runs records through a finished handshake; handshake_ms runs whole handshakes, the
    server's part a share of both ends'."""
    assert bench_tls.record_us(50) > 0
    both, server = bench_tls.handshake_ms(3)
    assert 0 < server < both
