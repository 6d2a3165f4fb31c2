"""An executor worker process: runs the tasks its node monitor sends over a private Unix socket.

Started by ProcessExecutor as `python -m sparrow_runtime.worker_main FD MAX_FRAME`, where FD is this
process's end of a socket pair. It reads LaunchTask frames, runs each task (task_codec.run_task) and
answers one ExecutorResult per task, in order. It exits when the node monitor closes the socket.
No handshake: the socket pair is private to the two processes, nobody else can connect to it.
"""

from __future__ import annotations

import socket
import sys

from .errors import FrameTooLarge
from .framing import RECEIVE_SIZE, FrameDecoder, encode_frames
from .messages import ExecutorResult, LaunchTask
from .task_codec import run_task


def serve(sock: socket.socket, max_frame: int) -> None:
    decoder = FrameDecoder(max_frame)
    while True:
        data = sock.recv(RECEIVE_SIZE)
        if not data:
            return
        for msg in decoder.feed(data):
            if not isinstance(msg, LaunchTask):
                raise SystemExit(f"sparrow worker: unexpected {type(msg).__name__} from the node monitor")
            ok, payload, error = run_task(msg.payload)
            try:
                frame = encode_frames([ExecutorResult(ok, payload, error)], max_frame)
            except FrameTooLarge as exc:
                frame = encode_frames([ExecutorResult(False, b"", f"the task's outcome is too large to send: {exc}")])
            sock.sendall(frame)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m sparrow_runtime.worker_main FD MAX_FRAME", file=sys.stderr)
        return 2
    with socket.socket(fileno=int(argv[0])) as sock:
        serve(sock, int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
