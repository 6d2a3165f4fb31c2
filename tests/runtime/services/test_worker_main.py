"""The worker process's loop (worker_main.serve) over a socket pair, without a node monitor."""

from __future__ import annotations

import socket
import threading

from sparrow_runtime.services.worker_main import serve
from sparrow_runtime.wire.framing import FrameDecoder, encode_frames
from sparrow_runtime.wire.messages import TOO_LARGE, OutcomeToNode, TaskToWorker
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

MAX_FRAME = 64 * 1024


def _outcomes(payloads: list[bytes]) -> list[OutcomeToNode]:
    """Run `payloads` through `serve` in a thread and return the outcomes it answers, in order."""
    ours, theirs = socket.socketpair()
    worker = threading.Thread(target=serve, args=(theirs, MAX_FRAME), daemon=True)
    worker.start()
    ours.sendall(encode_frames([TaskToWorker(p) for p in payloads], MAX_FRAME))
    decoder, got = FrameDecoder(MAX_FRAME), []
    ours.settimeout(30)
    while len(got) < len(payloads):
        got += decoder.feed(ours.recv(1 << 16))
    ours.close()
    worker.join(timeout=30)
    theirs.close()
    return got


def test_an_outcome_over_the_frame_limit_fails_as_too_large_and_the_next_task_runs():
    """A result over the worker's frame limit is answered TOO_LARGE (never retried), naming the size; the
    worker goes on with the next task."""
    big, small = _outcomes([pack_task(bytes, (MAX_FRAME * 2,)), pack_task(sum, ([1, 2, 3],))])
    assert not big.outcome.ok and big.outcome.failure == TOO_LARGE
    assert "too large to send" in big.outcome.error
    assert small.outcome.ok and unpack_outcome(small.outcome) == 6
