"""A worker's capture of what its tasks write to stdout and stderr, per task and bounded.

`Capture.start` points the worker's file descriptors 1 and 2 at two pipes once, when the worker starts, so that
Python's prints, C code's writes and the output of the programs a task runs (they inherit 1 and 2) all land
there. A reader thread drains both pipes as they fill (a task that prints more than a pipe holds never blocks)
into a bounded buffer per stream: the first `cap - tail` bytes and the last `tail` bytes are kept, what lies
between is only counted, so a task that prints 1 GB costs the worker no more memory than one that prints `cap`.

After each task the worker flushes Python's own buffers (`flush`: no system call when they are empty) and asks
its one poll of the node monitor's socket about the two pipes as well (worker_main.py), so a task that printed
nothing costs no extra system call; only when a pipe or the buffer holds something does it `take` the task's
output: the reader's lock is taken, the pipes are drained to the end, and the buffers are emptied into an
Output. A byte that a program the task started writes after the task ended counts for the next task.

The worker's own last words (a protocol error it exits with) go to the stderr it was started with (`restore`).
"""

from __future__ import annotations

import os
import select
import sys
import threading

from ..wire.messages import Output

DEFAULT_OUTPUT_CAP = 64 * 1024  # bytes of each of a task's stdout and stderr kept (a node monitor's output_cap)
READ_SIZE = 65536  # bytes one read takes from a pipe
MAX_READS = 64  # reads of each pipe per turn: a program that writes without pause cannot hold the lock forever
MAX_TAIL = 4096  # bytes of the end of a stream kept besides its head (the end shows how a long output ended)


def marker(left_out: int, why: str) -> bytes:
    """The line put where `left_out` bytes of a task's output were left out, and `why`."""
    return f"\n[sparrow: {left_out:,} bytes of output left out here: {why}]\n".encode()


class _Stream:
    """One stream's output of the current task: `head` (at most `head_max` bytes), then `tail`, the last
    `tail_max` bytes of what came after the head; `after` counts every byte after the head."""

    __slots__ = ("after", "head", "head_max", "tail", "tail_max")

    def __init__(self, cap: int) -> None:
        self.tail_max = min(MAX_TAIL, cap // 4)
        self.head_max = cap - self.tail_max
        self.head = bytearray()
        self.tail = bytearray()
        self.after = 0

    def add(self, data: bytes) -> None:
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.after += len(data)
            self.tail += data[-self.tail_max :] if self.tail_max else b""
            over = len(self.tail) - self.tail_max
            if over > 0:
                del self.tail[:over]

    def take(self, cap: int) -> bytes:
        """The stream's bytes, cut with a marker where some were left out; empties it."""
        left_out = self.after - len(self.tail)
        if left_out > 0:
            text = bytes(self.head + marker(left_out, f"over the task's output cap of {cap:,} bytes") + self.tail)
        else:
            text = bytes(self.head + self.tail)
        self.head.clear()
        self.tail.clear()
        self.after = 0
        return text

    def __bool__(self) -> bool:
        return bool(self.head)


class Capture:
    """The capture of fd 1 and 2 of this process, each task's output kept up to `cap` bytes per stream."""

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"cap must be a number of bytes >= 1, got {cap!r}")
        self.cap = cap
        self._streams = (_Stream(cap), _Stream(cap))  # stdout, stderr
        self._lock = threading.Lock()  # held by whoever reads the pipes and fills the streams
        self.held = False  # the streams hold some of the current task's output
        self.fds: tuple[int, ...] = ()  # the pipes' read ends (the worker polls them with its socket)
        self._stderr = -1  # the stderr the worker started with

    def start(self) -> tuple[int, ...]:
        """Point fd 1 and 2 at the pipes and start the reader thread; the pipes' read ends."""
        self._stderr = os.dup(2)
        os.set_inheritable(self._stderr, False)
        fds = []
        for target in (1, 2):
            read, write = os.pipe()
            os.set_blocking(read, False)
            os.dup2(write, target)  # inheritable: the programs a task runs write here too
            os.close(write)
            fds.append(read)
        self.fds = tuple(fds)
        threading.Thread(target=self._drain, name="sparrow-output", daemon=True).start()
        return self.fds

    def restore(self) -> None:
        """Point fd 2 at the stderr the worker started with again."""
        if self._stderr >= 0:
            os.dup2(self._stderr, 2)

    @staticmethod
    def flush() -> None:
        """Flush Python's stdout and stderr into their pipes (nothing to do, no system call, when empty)."""
        # once per task: a try costs nothing, a suppress() makes an object; a task may have replaced or closed them
        try:  # noqa: SIM105
            sys.stdout.flush()
        except Exception:
            pass
        try:  # noqa: SIM105
            sys.stderr.flush()
        except Exception:
            pass

    def holding(self) -> bool:
        """Whether the reader is reading some of the current task's output or holds some. In that order: a read
        that ends between the two looks set `held` before it let the lock go."""
        return self._lock.locked() or self.held

    def take(self) -> Output | None:
        """The current task's output, the pipes drained first (None if it printed nothing)."""
        with self._lock:
            self._read()
            stdout, stderr = (s.take(self.cap) if s else b"" for s in self._streams)
            self.held = False
        if not stdout and not stderr:
            return None
        return Output(stdout, stderr)

    def _drain(self) -> None:
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, select.POLLIN)
        while True:
            poller.poll()
            with self._lock:
                self._read()

    def _read(self) -> None:
        """Read what the pipes hold now (lock held)."""
        for fd, stream in zip(self.fds, self._streams, strict=True):
            for _ in range(MAX_READS):
                try:
                    data = os.read(fd, READ_SIZE)
                except BlockingIOError:
                    break
                if not data:
                    break
                stream.add(data)
                self.held = True
