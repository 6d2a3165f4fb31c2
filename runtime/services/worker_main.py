"""An executor worker process: runs the tasks its node monitor sends over a private Unix socket.

Started by ProcessExecutor as
`python -m sparrow_runtime.services.worker_main FD MAX_FRAME OUTPUT_CAP [SIDE SHARE_OVER]`, where FD is this
process's end of a socket pair, in a session of its own (a Ctrl-C meant for the node monitor does not reach a
running task). It reads TaskToWorker frames, runs each task (task_codec.run_task)
and answers one OutcomeToNode per task, in order; tasks that come while one runs queue behind it, and a
DropTask drops a queued one unstarted (serve). It exits when the node monitor closes the socket.
With SIDE (the end of a second socket pair) big values skip the frames: the inputs a TaskToWorker marks
`shared` come as memory files over SIDE, and a result of over SHARE_OVER bytes goes back as one
(data/shared.py), so neither side copies it through the socket, nor decodes it from a frame.
No handshake: the socket pair is private to the two processes, nobody else can connect to it.
With OUTPUT_CAP > 0 what each task writes to stdout and stderr is captured (task_output.py), up to OUTPUT_CAP bytes
of each, and sent just before its outcome (OutputToNode); with 0 it goes to the stderr the worker was started with.

It makes itself non-dumpable first (`stay_private`, Linux): another process of its OS user, such as a
sibling worker running another user's tasks, can then neither read its memory (/proc/PID/mem) nor trace
it; only a holder of CAP_SYS_PTRACE (root) can. A program its task runs (exec) is dumpable again.

It dies with its node monitor, whatever kills it: a watcher thread waits for the node monitor's end
of the socket to close (the kernel closes it when the node monitor dies, even by SIGKILL) and then
kills this worker's process group, the processes its task started included (at once, unless the
task holds the GIL in one long C call: then when it returns). The socket is not inherited by the
programs a task runs, so none of them can keep the line open.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import threading
from collections import deque
from functools import partial

import cloudpickle

from ..data import packed, shared
from ..errors import FrameTooLarge
from ..wire.framing import RECEIVE_SIZE, FrameDecoder, encode_frames
from ..wire.limits import CHUNK_SIZE
from ..wire.messages import (
    TOO_LARGE,
    DropTask,
    Outcome,
    OutcomeToNode,
    Output,
    OutputToNode,
    TaskToWorker,
    WorkerReady,
)
from ..wire.task_codec import run_task
from .task_output import Capture

# the node monitor's end closed (or, for a socket, its writing side shut down)
HANGUP = select.POLLHUP | getattr(select, "POLLRDHUP", 0)
PR_SET_DUMPABLE = 4  # linux/prctl.h


def serve(
    sock: socket.socket,
    max_frame: int,
    side: socket.socket | None = None,
    share_over: int = 0,
    capture: Capture | None = None,
) -> None:
    """Run the tasks that come over `sock` in order, one OutcomeToNode each, until the node monitor closes it.

    Tasks may come while one runs (a node monitor hands tasks bound ahead to a busy worker): they queue
    here. Before it answers a task, the worker takes what came meanwhile, drops the queued tasks a DropTask
    names and lists them in the answer (`dropped`); the next queued task starts as the answer is sent, so
    the node monitor knows from each answer which task runs now, and one that it dropped never starts.
    With `capture`, what each task printed goes just before its outcome (OutputToNode); the poll that looks
    for what came on `sock` looks at the capture's pipes too, so a task that printed nothing costs no system
    call more."""
    decoder = FrameDecoder(max_frame)
    keep = None if side is None or share_over <= 0 else partial(_keep_result, side, share_over)
    # what came while a task ran: poll(0) first, since a read that finds nothing costs an exception and a buffer
    # of RECEIVE_SIZE (measured 8-15 us against 3.5-4.7 per task at load 13)
    pending = select.poll()
    pending.register(sock, select.POLLIN | HANGUP)
    line = sock.fileno()
    for fd in capture.fds if capture is not None else ():
        pending.register(fd, select.POLLIN)
    queue: deque[tuple[int, TaskToWorker]] = deque()  # (its number, the task), not started
    drops: set[int] = set()  # numbers of tasks to drop (DropTask) that were not started
    dropped: list[int] = []  # ... dropped since the last answer: the next answer says so
    received = 0

    def take(data: bytes) -> None:
        nonlocal received
        for msg in decoder.feed(data):
            kind = type(msg)
            if kind is TaskToWorker:
                queue.append((received, msg))
                received += 1
            elif kind is DropTask:
                if msg.seq < received:  # else a number it never got: nothing to drop
                    drops.add(msg.seq)
            else:
                raise SystemExit(f"sparrow worker: unexpected {kind.__name__} from the node monitor")

    while True:
        if not queue:
            data = sock.recv(max(RECEIVE_SIZE, min(decoder.missing, CHUNK_SIZE)))
            if not data:
                return
            take(data)
            if drops:
                dropped += _drop(queue, drops, side)
            continue
        _, msg = queue.popleft()
        inputs = msg.inputs
        if msg.shared:
            inputs = _shared_inputs(side, msg)
        outcome = run_task(msg.payload, inputs, keep)
        inputs = None  # the inputs' maps go before the result is sent
        if capture is not None:
            capture.flush()
        reply = OutcomeToNode(outcome)
        if outcome is _KEPT:
            reply = OutcomeToNode(Outcome(True), shared=True)
        elif side is not None and outcome.ok and len(outcome.payload) > share_over > 0:
            reply = _share_result(side, outcome)
        printed = False
        while ready := pending.poll(0):  # what came while it ran (and whether it printed)
            if all(fd != line for fd, _ in ready):
                printed = True
                break
            printed = printed or len(ready) > 1
            data = sock.recv(max(RECEIVE_SIZE, min(decoder.missing, CHUNK_SIZE)))
            if not data:
                return  # the node monitor is gone
            take(data)
        if drops:  # (a call per task else)
            dropped += _drop(queue, drops, side)
        output = capture.take() if capture is not None and (printed or capture.holding()) else None
        if dropped:
            reply = OutcomeToNode(reply.outcome, reply.shared, tuple(dropped))
        try:
            frame = encode_frames([reply] if output is None else [OutputToNode(output), reply], max_frame)
        except FrameTooLarge as exc:
            frame = _fitting(reply, output, max_frame, exc)
        dropped.clear()
        sock.sendall(frame)


def _fitting(reply: OutcomeToNode, output: Output | None, max_frame: int, exc: FrameTooLarge) -> bytearray:
    """The frames of `reply` (and `output`), one of them over `max_frame` bytes: `reply` alone if it fits (what a
    task printed never fails it), else a TOO_LARGE failure (alone, once: TOO_LARGE is never retried)."""
    if output is not None:
        try:
            return encode_frames([reply], max_frame)
        except FrameTooLarge as again:
            exc = again
    too_large = Outcome(False, b"", f"the task's outcome is too large to send: {exc}", TOO_LARGE)
    return encode_frames([OutcomeToNode(too_large, dropped=reply.dropped)])


def _drop(queue: deque, drops: set[int], side: socket.socket | None) -> tuple[int, ...]:
    """Remove the queued tasks numbered in `drops` (their memory files, if any, are taken and closed); their
    numbers, in order."""
    if not drops:
        return ()
    dropped = []
    for item in list(queue):
        seq, msg = item
        if seq in drops:
            queue.remove(item)
            dropped.append(seq)
            if msg.shared:
                _shared_inputs(side, msg)  # taken off the side socket, so the next task's files come next
    drops.clear()  # the others had started (or ended) already
    return tuple(dropped)


def _shared_inputs(side: socket.socket | None, msg: TaskToWorker) -> list:
    """The task's inputs, those marked shared mapped from the memory files that came over `side`."""
    if side is None or msg.inputs is None:
        raise SystemExit("sparrow worker: shared inputs without a side socket or inputs")
    _, fds, _, _ = socket.recv_fds(side, 1, len(msg.shared))
    if len(fds) != len(msg.shared):
        for fd in fds:
            os.close(fd)
        raise SystemExit(f"sparrow worker: {len(fds)} memory files came for {len(msg.shared)} shared inputs")
    inputs: list = list(msg.inputs)
    for index, fd in zip(msg.shared, fds, strict=True):
        inputs[index] = shared.adopt(fd, 2**63, private=True)  # arrays over it are writable, copy on write
    return inputs


_KEPT = Outcome(True)  # run_task's outcome for a result that went as a memory file (_keep_result)


def _keep_result(side: socket.socket, share_over: int, result: object) -> Outcome:
    """The outcome of a result that is not of a plain type: over `share_over` bytes, written with its
    buffers out of band (packed.py) into a memory file sent over `side`, so that its readers take its
    arrays in place (_KEPT); else the pickle itself."""
    data, buffers = packed.dump(result)
    if not buffers:
        return Outcome(True, data)  # the same bytes as an in-band pickle
    size = packed.packed_size(data, buffers)
    if size <= share_over:
        return Outcome(True, cloudpickle.dumps(result))
    try:
        fd = shared.new_fd(size)
    except OSError:  # no memory file now: in band, in the frame
        return Outcome(True, cloudpickle.dumps(result))
    try:
        packed.write(fd, data, buffers)
        shared.seal_fd(fd)
        socket.send_fds(side, [b"\0"], [fd])
    finally:
        os.close(fd)
    return _KEPT


def _share_result(side: socket.socket, outcome: Outcome) -> OutcomeToNode:
    """Send the outcome's value as a memory file over `side`; the reply that says so (or, if no memory file
    can be made, the outcome inline)."""
    try:
        fd = shared.sealed_fd(outcome.payload)
    except OSError:
        return OutcomeToNode(outcome)
    try:
        socket.send_fds(side, [b"\0"], [fd])
    finally:
        os.close(fd)
    return OutcomeToNode(Outcome(True), shared=True)


def die_with_node_monitor(fd: int) -> None:
    """Wait (in a thread) until the node monitor's end of `fd` closes, then kill this process group."""
    poller = select.poll()
    poller.register(fd, HANGUP)
    while not poller.poll():
        pass
    if os.getpgrp() == os.getpid():  # started as ProcessExecutor starts it: the group is this worker's
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def stay_private() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no process without CAP_SYS_PTRACE reads this one's memory or traces it,
    not even one of its own OS user (the kernel's ptrace access check). Nothing to do off Linux. Raises
    OSError if the kernel refuses (the worker then exits: it must not run tasks readable by its siblings)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(errno)}")


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 5):
        print(
            "usage: python -m sparrow_runtime.services.worker_main FD MAX_FRAME OUTPUT_CAP [SIDE SHARE_OVER]",
            file=sys.stderr,
        )
        return 2
    stay_private()
    fd = int(argv[0])
    os.set_inheritable(fd, False)  # the programs a task runs must not hold the node monitor's line open
    side = None
    if len(argv) == 5:
        os.set_inheritable(int(argv[3]), False)
        side = socket.socket(fileno=int(argv[3]))
    threading.Thread(target=die_with_node_monitor, args=(fd,), name="sparrow-lifeline", daemon=True).start()
    capture = Capture(int(argv[2])) if int(argv[2]) > 0 else None
    if capture is not None:
        capture.start()
    try:
        with socket.socket(fileno=fd) as sock:
            sock.sendall(encode_frames([WorkerReady()]))  # imported: tasks may come (they start at once)
            serve(sock, int(argv[1]), side, int(argv[4]) if side is not None else 0, capture)
    finally:
        if capture is not None:
            capture.restore()  # its last words (a protocol error) go where the node monitor's do
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
