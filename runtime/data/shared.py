"""Values in sealed memory files (Linux memfd), sans-I/O: how a big value crosses between a node monitor
and its worker processes without being copied through their socket (executor workers import this: no trio).

A value goes into an anonymous memory file, which is then sealed (no write, no resize, no more seals)
and mapped read-only: a `SharedValue`, a bytes-like object (an mmap) whose file descriptor is passed to
the other process over a Unix socket (SCM_RIGHTS). The receiver checks the seals before it maps the
file, so the sender cannot change the value once it was handed over. A node monitor keeps the big
results of its workers this way (the store holds the map; no frame of the value crosses its event loop),
fetches its tasks' remote inputs straight into one, and hands a kept value to a worker by its
descriptor alone: no copy at all.

Where memory files do not exist (`AVAILABLE` false: not Linux), values travel inline in frames.

Error handling: `adopt` raises ValueError, naming why, for a file that is not sealed and cannot be,
that is empty, or that is over the size limit; OSError from the system passes through.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer  # bytes, bytearray, memoryview, mmap: what memoryview() takes

AVAILABLE = hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS")
# Values of fewer bytes travel in frames: copying them costs less than the descriptors a memory file holds.
SHARE_MIN = 1024 * 1024
SEALS = (
    getattr(fcntl, "F_SEAL_WRITE", 0)
    | getattr(fcntl, "F_SEAL_SHRINK", 0)
    | getattr(fcntl, "F_SEAL_GROW", 0)
    | getattr(fcntl, "F_SEAL_SEAL", 0)
)


class SharedValue(mmap.mmap):
    """A read-only map of a sealed memory file; `fd` is its descriptor (closed once the map is collected)."""

    fd: int


def _memfd() -> int:
    return os.memfd_create("sparrow-value", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _map(fd: int, size: int, access: int = mmap.ACCESS_READ) -> SharedValue:
    value = SharedValue(fd, size, access=access)
    value.fd = fd
    weakref.finalize(value, os.close, fd)
    return value


def sealed_fd(data: Buffer) -> int:
    """A new sealed memory file holding `data` (bytes-like, not empty); its descriptor, the caller's to close."""
    fd = _memfd()
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_fd(size: int) -> int:
    """A new memory file of `size` bytes, to write and then seal (`seal_fd`); the caller's to close."""
    fd = _memfd()
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def seal_fd(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)


def share(data: Buffer) -> SharedValue:
    """`data` (bytes-like, not empty) copied into a sealed memory file."""
    fd = sealed_fd(data)
    return _map(fd, len(memoryview(data).cast("B")))


def adopt(fd: int, max_size: int, private: bool = False) -> SharedValue:
    """The value in the memory file `fd` another process sent (now ours: closed with the value, or here on
    an error). It must be sealed against writes and resizing (sealed here if its sender did not and
    nobody can still write to it), not empty, and at most `max_size` bytes. `private`: mapped copy on
    write, so that arrays made over it are writable (a write changes this process's pages only)."""
    try:
        size = os.fstat(fd).st_size
        if size == 0 or size > max_size:
            raise ValueError(f"a shared value of {size:,} bytes (it must be 1 to {max_size:,} bytes)")
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            raise ValueError("a shared value that is not a memory file") from None
        if seals & SEALS != SEALS:
            try:
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS & ~seals)
            except OSError as exc:
                raise ValueError(f"a shared value that its sender may still change (cannot seal it: {exc})") from None
        return _map(fd, size, mmap.ACCESS_COPY if private else mmap.ACCESS_READ)
    except BaseException:
        os.close(fd)
        raise


def raise_file_limit() -> None:
    """Raise this process's soft limit of open files to its hard one (two descriptors per shared value)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Writable:
    """A memory file of `size` bytes being written (`write`); `seal()` turns it into a SharedValue. Dropped
    unsealed, its file is closed."""

    def __init__(self, size: int) -> None:
        fd = _memfd()
        self._closer = weakref.finalize(self, os.close, fd)
        self.fd = fd
        self.size = size
        os.ftruncate(fd, size)

    def write(self, data: Buffer, offset: int) -> None:
        """Put `data` at `offset` (a write, not a map: no page faults of a fresh map to pay)."""
        view = memoryview(data).cast("B")
        while view:
            done = os.pwrite(self.fd, view, offset)
            view, offset = view[done:], offset + done

    def seal(self) -> SharedValue:
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, SEALS)
        self._closer.detach()
        return _map(self.fd, self.size)
