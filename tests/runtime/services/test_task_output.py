"""A task's output, without processes: a worker's per-stream buffer (task_output._Stream: head, tail and the marker
between), a node monitor's rate cap (output_limit.OutputLimit, a token bucket on a fake clock), and its cost on
the wire (none when a task printed nothing; never a failure when it printed too much for a frame)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import msgspec
import pytest

from sparrow_runtime.errors import FrameTooLarge
from sparrow_runtime.services.node_monitor import NodeMonitorService
from sparrow_runtime.services.output_limit import OutputLimit, check_output_settings, output_limit
from sparrow_runtime.services.task_output import MAX_TAIL, Capture, _Stream
from sparrow_runtime.services.worker_main import _fitting
from sparrow_runtime.wire.framing import FrameDecoder
from sparrow_runtime.wire.messages import (
    TOO_LARGE,
    GetTask,
    Message,
    Outcome,
    OutcomeToNode,
    OutcomeToScheduler,
    Output,
    OutputToClient,
    OutputToScheduler,
)


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


def test_the_rate_cap_passes_a_burst_then_cuts_with_a_marker_and_refills_at_its_rate():
    """Within the bucket an output passes whole, named after its node monitor; past it the output keeps what
    the bucket holds and a marker naming the rate; a second later `rate` bytes pass again."""
    clock = Clock()
    limit = OutputLimit("nm-a", rate=1000, burst=3000, clock=clock)
    assert limit.admit(Output(b"o" * 2500)) == Output(b"o" * 2500, b"", "nm-a")
    cut = limit.admit(Output(b"o" * 2000))
    assert cut.stdout.startswith(b"o" * 500 + b"\n[sparrow: 1,500 bytes of output left out")
    assert b"over the node monitor's output rate cap of 1,000 bytes/s" in cut.stdout
    assert limit.cut == 1500
    clock.now = 1.0
    assert limit.admit(Output(b"o" * 1000)) == Output(b"o" * 1000, b"", "nm-a")
    assert limit.admit(Output(b"o" * 10)).stdout.startswith(b"\n[sparrow: 10 bytes")


def test_the_rate_cap_cuts_stderr_after_stdout():
    limit = OutputLimit("nm-a", rate=10, burst=10, clock=Clock())
    out = limit.admit(Output(b"0123456", b"abcdef"))
    assert out.stdout == b"0123456" and out.stderr.startswith(b"abc\n[sparrow: 3 bytes")


def test_a_node_monitors_bucket_holds_at_least_a_few_tasks_at_the_cap():
    assert output_limit("nm", 65536, 1000).burst == 4 * 65536
    assert output_limit("nm", 0, 1000).burst == 1000


@pytest.mark.parametrize(("cap", "rate"), [(-1, 1), (2**21, 1), (True, 1), (1, 0), (1, 1.5)])
def test_bad_output_settings_are_refused_by_name(cap, rate):
    with pytest.raises(ValueError, match=r"output_cap|output_rate"):
        check_output_settings(cap, rate)


def test_an_outcome_carries_no_output_field_and_an_output_travels_in_a_message_of_its_own():
    """A task that printed nothing costs no byte: Outcome has no field for output; what a task printed goes in an
    OutputTo<receiver> just before its outcome."""
    assert "output" not in Outcome.__struct_fields__
    msg = OutputToClient(3, 1, Output(b"hi\n", b"", "nm-0"))
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(msg), type=Message) == msg


def test_an_output_too_large_for_the_frame_is_left_out_and_the_task_stays_ok():
    reply = OutcomeToNode(Outcome(True, b"v"), dropped=(3,))
    frame = _fitting(reply, Output(b"o" * 100_000), 64 * 1024, FrameTooLarge("over"))
    assert FrameDecoder(64 * 1024).feed(bytes(frame)) == [reply]
    big = OutcomeToNode(Outcome(True, b"v" * 100_000))
    (msg,) = FrameDecoder(64 * 1024).feed(bytes(_fitting(big, Output(b"o"), 64 * 1024, FrameTooLarge("over"))))
    assert not msg.outcome.ok and msg.outcome.failure == TOO_LARGE


def test_a_node_monitor_puts_a_tasks_output_just_before_its_outcome_and_counts_it():
    """What a task printed goes right before that task's OutcomeToScheduler (none if its outcome is not sent),
    cut to the rate cap; the node monitor's stats count the bytes sent and cut (its metrics)."""
    shell = SimpleNamespace(
        output_limit=OutputLimit("nm-a", rate=10, burst=10, clock=Clock()), logic=SimpleNamespace(stats=Counter())
    )
    other, ours = OutcomeToScheduler(1, 1, Outcome(True)), OutcomeToScheduler(1, 0, Outcome(True))
    out = [("s", other), ("s", ours), ("s", GetTask(1))]
    NodeMonitorService._put_output(shell, out, 1, 0, Output(b"0123456789abcdef"))
    assert [type(m) for _, m in out] == [OutcomeToScheduler, OutputToScheduler, OutcomeToScheduler, GetTask]
    sent = out[1][1].output
    assert sent.node == "nm-a" and sent.stdout.startswith(b"0123456789\n[sparrow: 6 bytes")
    assert shell.logic.stats == Counter(output_bytes=len(sent.stdout), output_cut_bytes=6)
    gone = [("s", GetTask(1))]  # its scheduler is gone: no outcome, so no output either
    NodeMonitorService._put_output(shell, gone, 1, 0, Output(b"x"))
    assert len(gone) == 1
