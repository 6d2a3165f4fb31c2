"""A task's output, without processes: a worker's per-stream buffer (task_output._Stream: head, tail and the marker
between), a node monitor's rate cap (output_limit.OutputLimit, a token bucket on a fake clock), and its cost on
the wire (none when a task printed nothing; never a failure when it printed too much for a frame)."""

from __future__ import annotations

import msgspec
import pytest

from sparrow_runtime.errors import FrameTooLarge
from sparrow_runtime.services.output_limit import OutputLimit, check_output_settings, output_limit
from sparrow_runtime.services.task_output import MAX_TAIL, Capture, _Stream
from sparrow_runtime.services.worker_main import _without_output
from sparrow_runtime.wire.framing import FrameDecoder
from sparrow_runtime.wire.messages import TOO_LARGE, Outcome, OutcomeToNode, Output


def test_a_stream_under_its_cap_is_kept_whole_and_emptied_when_taken():
    stream = _Stream(1000)
    stream.add(b"a" * 600)
    stream.add(b"b" * 400)
    assert stream.take(1000) == b"a" * 600 + b"b" * 400
    assert not stream and stream.take(1000) == b""


def test_a_stream_over_its_cap_keeps_its_head_and_tail_around_a_marker_that_counts_what_was_left_out():
    cap = 64 * 1024
    stream = _Stream(cap)
    for i in range(1000):  # 1000 chunks of 10 KiB: about 10 MB, each chunk's bytes say which it is
        stream.add(bytes([65 + i % 26]) * 10 * 1024)
    text = stream.take(cap)
    head, _, tail = text.partition(b"\n[sparrow: ")
    assert len(head) == cap - MAX_TAIL and head.startswith(b"A" * 10 * 1024)
    left_out = 1000 * 10 * 1024 - (cap - MAX_TAIL) - MAX_TAIL
    assert f"{left_out:,} bytes of output left out here: over the task's output cap of {cap:,} bytes]".encode() in tail
    assert tail.endswith(bytes([65 + 999 % 26]) * MAX_TAIL)
    assert len(text) < cap + 200


def test_a_small_cap_keeps_a_quarter_for_the_tail():
    stream = _Stream(8)
    stream.add(b"0123456789abcdef")
    assert (
        stream.take(8)
        == b"012345" + b"\n[sparrow: 8 bytes of output left out here: over the task's output cap of 8 bytes]\n" + b"ef"
    )


def test_a_capture_needs_a_positive_cap():
    with pytest.raises(ValueError, match="cap must be"):
        Capture(0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _printed(n: int) -> Outcome:
    return Outcome(True, b"x", output=Output(b"o" * n))


def test_the_rate_cap_passes_a_burst_then_cuts_with_a_marker_and_refills_at_its_rate():
    """Within the bucket an output passes whole, named after its node monitor; past it the output keeps what
    the bucket holds and a marker naming the rate; a second later `rate` bytes pass again. The outcome's
    value is untouched."""
    clock = Clock()
    limit = OutputLimit("nm-a", rate=1000, burst=3000, clock=clock)
    first = limit.admit(_printed(2500))
    assert first.output == Output(b"o" * 2500, b"", "nm-a") and first.payload == b"x"
    cut = limit.admit(_printed(2000)).output
    assert cut is not None and cut.stdout.startswith(b"o" * 500 + b"\n[sparrow: 1,500 bytes of output left out")
    assert b"over the node monitor's output rate cap of 1,000 bytes/s" in cut.stdout
    assert limit.cut == 1500
    clock.now = 1.0
    assert limit.admit(_printed(1000)).output == Output(b"o" * 1000, b"", "nm-a")
    assert limit.admit(_printed(10)).output.stdout.startswith(b"\n[sparrow: 10 bytes")


def test_the_rate_cap_cuts_stderr_after_stdout():
    limit = OutputLimit("nm-a", rate=10, burst=10, clock=Clock())
    out = limit.admit(Outcome(True, output=Output(b"0123456", b"abcdef"))).output
    assert out.stdout == b"0123456" and out.stderr.startswith(b"abc\n[sparrow: 3 bytes")


def test_a_node_monitors_bucket_holds_at_least_a_few_tasks_at_the_cap():
    assert output_limit("nm", 65536, 1000).burst == 4 * 65536
    assert output_limit("nm", 0, 1000).burst == 1000


@pytest.mark.parametrize(("cap", "rate"), [(-1, 1), (2**21, 1), (True, 1), (1, 0), (1, 1.5)])
def test_bad_output_settings_are_refused_by_name(cap, rate):
    with pytest.raises(ValueError, match=r"output_cap|output_rate"):
        check_output_settings(cap, rate)


def test_an_outcome_without_output_costs_no_byte_on_the_wire():
    """Outcome leaves its trailing default fields out: a plain result encodes as [ok, payload] only."""
    assert msgspec.msgpack.encode(Outcome(True, b"v")) == msgspec.msgpack.encode([True, b"v"])
    printed = Outcome(True, b"v", output=Output(b"hi\n"))
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(printed), type=Outcome) == printed


def test_an_outcome_too_large_with_its_output_is_sent_without_it_and_the_task_stays_ok():
    reply = OutcomeToNode(Outcome(True, b"v", output=Output(b"o" * 100_000)), dropped=(3,))
    (msg,) = FrameDecoder(64 * 1024).feed(bytes(_without_output(reply, 64 * 1024, FrameTooLarge("over"))))
    assert msg == OutcomeToNode(Outcome(True, b"v"), dropped=(3,))
    big = OutcomeToNode(Outcome(True, b"v" * 100_000, output=Output(b"o")))
    (msg,) = FrameDecoder(64 * 1024).feed(bytes(_without_output(big, 64 * 1024, FrameTooLarge("over"))))
    assert not msg.outcome.ok and msg.outcome.failure == TOO_LARGE
