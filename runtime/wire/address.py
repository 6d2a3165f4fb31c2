"""Service addresses: `(host, port)` tuples, written "host:port" on command lines and stdout; a Unix
domain socket of this host is `("unix:PATH", 0)`, written "unix:PATH" (cheaper hops between services
on one host: docs/runtime.md)."""

from __future__ import annotations

from typing import Any

Address = tuple[str, int]

UNIX_PREFIX = "unix:"
UNIX_PATH_MAX = 107  # sun_path is 108 bytes on Linux, with its terminating NUL


def parse_address(address: str | tuple[str, int]) -> Address:
    """Accept "host:port", "[v6host]:port", "unix:PATH" or a (host, port) pair; raise ValueError naming
    a bad one."""
    if isinstance(address, str) and address.startswith(UNIX_PREFIX):
        return unix_address(address[len(UNIX_PREFIX) :])
    given: Any  # the port as given: an int, its text, or whatever a caller passed
    if isinstance(address, (tuple, list)) and len(address) == 2:
        host, given = address
        if isinstance(host, str) and host.startswith(UNIX_PREFIX) and given == 0:
            return unix_address(host[len(UNIX_PREFIX) :])
    elif isinstance(address, str) and ":" in address:
        host, _, given = address.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    else:
        raise ValueError(f"address must be 'host:port', 'unix:PATH' or (host, port), got {address!r}")
    try:
        port = int(given)
    except (TypeError, ValueError):
        raise ValueError(f"address {address!r} has a non-integer port") from None
    if not host or not 0 < port < 65536:
        raise ValueError(f"address {address!r} needs a host and a port in 1..65535")
    return (str(host), port)


def unix_address(path: str) -> Address:
    """The address of the Unix socket at `path`; ValueError if it is empty or too long for a socket."""
    if not path:
        raise ValueError("a Unix socket address needs a path: unix:PATH")
    if "\0" in path or len(path.encode()) > UNIX_PATH_MAX:
        raise ValueError(f"Unix socket path {path!r} is longer than {UNIX_PATH_MAX} bytes or has a NUL")
    return (UNIX_PREFIX + path, 0)


def unix_path(address: Address) -> str | None:
    """The socket path of a Unix address, None for a TCP one."""
    host = address[0]
    return host[len(UNIX_PREFIX) :] if host.startswith(UNIX_PREFIX) else None


def format_address(address: Address) -> str:
    host, port = address
    if host.startswith(UNIX_PREFIX):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
