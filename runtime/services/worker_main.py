"""An executor worker process: runs the tasks its node monitor sends over a private Unix socket.

Started by ProcessExecutor as `python -m sparrow_runtime.services.worker_main FD MAX_FRAME`, where FD is this
process's end of a socket pair, in a session of its own (a Ctrl-C meant for the node monitor does not
reach a running task). It reads TaskToWorker frames, runs each task (task_codec.run_task) and answers
one OutcomeToNode per task, in order. It exits when the node monitor closes the socket.
No handshake: the socket pair is private to the two processes, nobody else can connect to it.

It dies with its node monitor, whatever kills it: a watcher thread waits for the node monitor's end
of the socket to close (the kernel closes it when the node monitor dies, even by SIGKILL) and then
kills this worker's process group, the processes its task started included (at once, unless the
task holds the GIL in one long C call: then when it returns). The socket is not inherited by the
programs a task runs, so none of them can keep the line open.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading

from ..errors import FrameTooLarge
from ..wire.framing import RECEIVE_SIZE, FrameDecoder, encode_frames
from ..wire.messages import TOO_LARGE, Outcome, OutcomeToNode, TaskToWorker
from ..wire.task_codec import run_task

# the node monitor's end closed (or, for a socket, its writing side shut down)
HANGUP = select.POLLHUP | getattr(select, "POLLRDHUP", 0)


def serve(sock: socket.socket, max_frame: int) -> None:
    decoder = FrameDecoder(max_frame)
    while True:
        data = sock.recv(RECEIVE_SIZE)
        if not data:
            return
        for msg in decoder.feed(data):
            if not isinstance(msg, TaskToWorker):
                raise SystemExit(f"sparrow worker: unexpected {type(msg).__name__} from the node monitor")
            try:
                frame = encode_frames([OutcomeToNode(run_task(msg.payload, msg.inputs))], max_frame)
            except FrameTooLarge as exc:  # fails alone, once: TOO_LARGE is never retried
                too_large = Outcome(False, b"", f"the task's outcome is too large to send: {exc}", TOO_LARGE)
                frame = encode_frames([OutcomeToNode(too_large)])
            sock.sendall(frame)


def die_with_node_monitor(fd: int) -> None:
    """Wait (in a thread) until the node monitor's end of `fd` closes, then kill this process group."""
    poller = select.poll()
    poller.register(fd, HANGUP)
    while not poller.poll():
        pass
    if os.getpgrp() == os.getpid():  # started as ProcessExecutor starts it: the group is this worker's
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m sparrow_runtime.services.worker_main FD MAX_FRAME", file=sys.stderr)
        return 2
    fd = int(argv[0])
    os.set_inheritable(fd, False)  # the programs a task runs must not hold the node monitor's line open
    threading.Thread(target=die_with_node_monitor, args=(fd,), name="sparrow-lifeline", daemon=True).start()
    with socket.socket(fileno=fd) as sock:
        serve(sock, int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
