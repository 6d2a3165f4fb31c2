"""The ready line: the one line a service process writes on its standard output once it serves (a node
monitor: once registered with every scheduler), and the contract between that process and whoever
started it (`sparrow scheduler` and `sparrow node-monitor` print it; LocalCluster and scripts read it).
A scheduler with metrics on also serves its dashboard there (docs/dashboard.md):

    sparrow scheduler: listening on 127.0.0.1:7077, metrics on http://127.0.0.1:9477/metrics, dashboard on http://127.0.0.1:9477/
"""

from __future__ import annotations

import re

from ..wire.address import Address, format_address

READY = re.compile(
    r"sparrow (?P<service>[\w-]+): listening on (?P<address>[^\s,]+)"
    r"(?:, metrics on (?P<metrics>[^\s,]+))?(?:, dashboard on (?P<dashboard>[^\s,]+))?"
)


def ready_line(name: str, address: Address, metrics_url: str | None = None, dashboard_url: str | None = None) -> str:
    """The ready line of service `name` ("scheduler", "node-monitor") serving at `address`."""
    line = f"sparrow {name}: listening on {format_address(address)}"
    if metrics_url is not None:
        line += f", metrics on {metrics_url}"
    if dashboard_url is not None:
        line += f", dashboard on {dashboard_url}"
    return line


def parse_ready_line(line: str) -> tuple[str, str | None, str | None] | None:
    """`(address, metrics URL or None, dashboard URL or None)` from a ready line, or None if `line`
    is not one."""
    found = READY.fullmatch(line.strip())
    return None if found is None else (found["address"], found["metrics"], found["dashboard"])
