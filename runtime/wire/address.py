"""Service addresses: `(host, port)` tuples, written "host:port" on command lines and stdout."""

from __future__ import annotations

Address = tuple[str, int]


def parse_address(address: str | tuple[str, int]) -> Address:
    """Accept "host:port", "[v6host]:port" or a (host, port) pair; raise ValueError naming a bad one."""
    if isinstance(address, (tuple, list)) and len(address) == 2:
        host, port = address
    elif isinstance(address, str) and ":" in address:
        host, _, port = address.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    else:
        raise ValueError(f"address must be 'host:port' or (host, port), got {address!r}")
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise ValueError(f"address {address!r} has a non-integer port") from None
    if not host or not 0 < port < 65536:
        raise ValueError(f"address {address!r} needs a host and a port in 1..65535")
    return (str(host), port)


def format_address(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
