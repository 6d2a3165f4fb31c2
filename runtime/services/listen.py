"""Binding a service's listeners (TCP, or a Unix socket for "unix:PATH"), and the address they are
bound to, with an error that says where and why in one line."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat

import trio

from ..errors import ListenError
from ..wire.address import Address, format_address, unix_address, unix_path

UNIX_BACKLOG = 1024


async def open_listeners(host: str, port: int) -> list[trio.SocketListener]:
    """`trio.open_tcp_listeners(port, host=host)` (port 0: any free port), or for host "unix:PATH" a
    listener on a Unix socket at PATH (mode 0600: only this user connects; a stale socket file nobody
    listens on is replaced).

    Error handling: a port in use, an address not of this host, a host name that does not resolve, a
    socket path in use or not creatable raises ListenError("cannot listen on ADDRESS: <reason>").
    """
    path = unix_path((host, port))
    try:
        if path is not None:
            return [_unix_listener(path)]
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        raise ListenError(f"cannot listen on {format_address((host, port))}: {exc.strerror or exc}") from exc


def _unix_listener(path: str) -> trio.SocketListener:
    _remove_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)  # created 0600, never briefly open to others
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        sock.listen(UNIX_BACKLOG)
    except OSError:
        sock.close()
        raise
    return trio.SocketListener(trio.socket.from_stdlib_socket(sock))


def _remove_stale(path: str) -> None:
    """Remove a socket file at `path` that nothing listens on (a service that died); OSError(EADDRINUSE)
    if something does, or if `path` is another kind of file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(errno.EADDRINUSE, "a file that is not a socket is in the way")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)
            return
    raise OSError(errno.EADDRINUSE, "another process listens on it")


def listener_address(listener: trio.SocketListener) -> Address:
    """The address `listener` is bound to: (host, port), or the Unix address of its path."""
    name = listener.socket.getsockname()
    if listener.socket.family == socket.AF_UNIX:
        return unix_address(name)
    return name[:2]


def remove_unix_socket(address: Address) -> None:
    """Remove the socket file of a Unix address a service listened on (nothing for TCP)."""
    path = unix_path(address)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
