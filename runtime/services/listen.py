"""Binding a service's TCP listeners, with an error that says where and why in one line."""

from __future__ import annotations

import trio

from ..errors import ListenError
from ..wire.address import format_address


async def open_listeners(host: str, port: int) -> list[trio.SocketListener]:
    """`trio.open_tcp_listeners(port, host=host)` (port 0: any free port).

    Error handling: a port in use, an address not of this host or a host name that does not resolve
    raises ListenError("cannot listen on HOST:PORT: <reason>").
    """
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        raise ListenError(f"cannot listen on {format_address((host, port))}: {exc.strerror or exc}") from exc
