"""Running one service in the foreground (`sparrow scheduler`, `sparrow node-monitor`): logs,
optional metrics, the ready line, and a stop on the first SIGTERM or SIGINT at any moment, even
before the service is ready (a node monitor drains first), or with --exit-with-parent once standard
input ends. Errors, such as a port in use, are one line.

The ready line (services/ready_line.py), on stdout once the service serves, is the only thing a
service writes there.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import trio

from ..errors import SparrowError
from ..services.http_server import serve_metrics
from ..services.metrics import new_registry
from ..services.node_monitor_logic import NodeMonitorLogic
from ..services.ready_line import ready_line
from ..wire.address import format_address, unix_path
from ..wire.guard import sole_error
from ..wire.tls import TLS
from .common import CommandError
from .config import ConfigError, Resolved

logger = logging.getLogger(__name__)
Logic = TypeVar("Logic")  # a service's logic class, plain or metered

DRAIN_POLL = 0.02  # seconds between checks of a draining node monitor's busy slots


def metrics_address(s: Resolved) -> tuple[str, int] | None:
    """Where a service serves metrics (`--metrics-listen`, or `--metrics-port` on the service's own
    `--listen` host, loopback beside a Unix socket), or None when they are off."""
    if s["metrics_listen"] is not None and s["metrics_port"] is not None:
        raise ConfigError("--metrics-listen and --metrics-port both say where to serve metrics: give one")
    if s["metrics_listen"] is not None:
        host, port = s["metrics_listen"]
        return (s["listen"][0] if host is None else host), port
    if s["metrics_port"] is not None:
        return (_metrics_host(s["listen"]), s["metrics_port"])
    return None


def _metrics_host(listen: tuple[str, int]) -> str:
    return "127.0.0.1" if unix_path(listen) is not None else listen[0]


def metrics_tls(s: Resolved, credentials: dict) -> TLS | None:
    """The TLS the metrics and dashboard are served with: the service's own, unless --metrics-insecure
    (a warning, unless they are on loopback) or the service has none (--insecure)."""
    tls = credentials.get("tls")
    if tls is None or not s["metrics_insecure"]:
        return tls
    where = metrics_address(s)
    if where is not None and not _is_loopback(where[0]):
        logger.warning(
            "--metrics-insecure: metrics and the dashboard on %s are plain HTTP, readable by anyone who can reach them",
            format_address(where),
        )
    return None


def service_logic(
    s: Resolved, plain: Callable[..., Logic], metered: Callable[..., Logic], **options: Any
) -> tuple[Logic, tuple | None]:
    """The logic of a service (`plain(**options)`), or, when metrics are on, its metered subclass
    and `(registry, host, port, None)` for `run_service`."""
    where = metrics_address(s)
    if where is None:
        return plain(**options), None
    registry = new_registry()
    return metered(registry, **options), (registry, *where, None)


def node_monitor_drain(logic: NodeMonitorLogic, start: trio.Event, timeout: float) -> Callable[[], Awaitable[None]]:
    """A drain step for `run_service`: set `start` (the node monitor's `drain` event: it takes no more
    reservations and tells its schedulers), then wait (at most `timeout` seconds) until the tasks
    running or asked for have finished and been reported."""

    async def drain() -> None:
        start.set()
        with trio.move_on_after(timeout):
            # the logic is sans-IO and sets no event when it empties: a poll, under the drain's deadline
            while logic.busy:  # noqa: ASYNC110
                await trio.sleep(DRAIN_POLL)
        if logic.busy:
            logger.warning("%d tasks still running after %g s: stopping them (reported failed)", logic.busy, timeout)

    return drain


async def _start_and_announce(
    nursery: trio.Nursery, service: Callable, name: str, metrics: tuple | None, tls: TLS | None
) -> None:
    """Serve the metrics (and dashboard, HTTPS with `tls`), then start `service` in `nursery`, then print
    the ready line. The metrics come first so that a service not yet ready can be watched: a node
    monitor waiting for a scheduler that is down serves `sparrow_node_schedulers` (those it is
    registered with) meanwhile."""
    metrics_url = dashboard_url = None
    if metrics is not None:
        registry, host, port, pages = metrics
        try:
            bound = serve_metrics(registry, host, port, pages, tls)
        except OSError as exc:
            raise CommandError(
                f"cannot serve metrics on {format_address((host, port))}: {exc.strerror or exc}"
            ) from None
        url = f"{'http' if tls is None else 'https'}://{format_address(bound)}"
        metrics_url = f"{url}/metrics" if registry is not None else None
        dashboard_url = f"{url}/" if pages is not None else None
        logger.info("serving %s on %s", "metrics" if pages is None else "metrics and the dashboard", url)
    address = await nursery.start(service)
    line = ready_line(name, address, metrics_url, dashboard_url)
    logger.info(line.removeprefix("sparrow "))
    if name == "scheduler" and _is_loopback(address[0]):
        logger.info("listening on loopback: only this host can connect (--listen 0.0.0.0:%d admits others)", address[1])
    print(line, flush=True)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def _stdin_closed() -> None:
    """Returns once standard input reaches end of file: the parent holding its other end is gone."""
    fd = sys.stdin.fileno()
    if stat.S_ISREG(os.fstat(fd).st_mode):  # a file cannot be waited on, and has its end already
        return
    while True:
        await trio.lowlevel.wait_readable(fd)
        if not os.read(fd, 4096):
            return


async def _stop_requested(signals: AsyncIterator[int], exit_with_parent: bool) -> str:
    """Wait for the first SIGTERM or SIGINT (or, with `exit_with_parent`, the end of standard input);
    returns what it was."""
    why = ""

    async def on(waiter: Callable[[], Awaitable[str]]) -> None:
        nonlocal why
        why = await waiter()
        waiting.cancel_scope.cancel()

    async def signal_received() -> str:
        async for signum in signals:
            return f"{signal.Signals(signum).name} received"
        return "no more signals"  # pragma: no cover - the receiver never ends

    async def parent_gone() -> str:
        await _stdin_closed()
        return "standard input closed (the parent is gone)"

    async with trio.open_nursery() as waiting:
        waiting.start_soon(on, signal_received)
        if exit_with_parent:
            waiting.start_soon(on, parent_gone)
    return why


async def _serve_until_stopped(
    service: Callable,
    name: str,
    metrics: tuple | None,
    drain: Callable[[], Awaitable[None]] | None,
    exit_with_parent: bool,
    tls: TLS | None,
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_start_and_announce, nursery, service, name, metrics, tls)
            logger.info("%s: stopping", await _stop_requested(signals, exit_with_parent))
            if drain is not None:
                async with trio.open_nursery() as draining:  # a second signal stops at once
                    draining.start_soon(_cancel_on_next, signals, draining.cancel_scope)
                    await drain()
                    draining.cancel_scope.cancel()
            nursery.cancel_scope.cancel()


async def _cancel_on_next(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        logger.warning("%s received again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return


def run_service(
    service: Callable,
    name: str,
    metrics: tuple | None = None,
    drain: Callable[[], Awaitable[None]] | None = None,
    *,
    exit_with_parent: bool = False,
    metrics_tls: TLS | None = None,
) -> int:
    """Run `service` (a `serve_...` partial) until SIGTERM or SIGINT (or, with `exit_with_parent`,
    the end of standard input); print its ready line once it serves.

    `metrics` (optional): `(registry, host, port, pages)` for `serve_metrics`, served from before the
    service starts (registry None: no Prometheus metrics; pages: the scheduler's
    dashboard, or None), served over HTTPS with `metrics_tls` (http_server.py). `drain` (optional):
    awaited after the first signal, before the service is cancelled.

    Error handling: a failure to start (port in use, no such address) raises CommandError with its
    one-line reason instead of a traceback.
    """
    try:
        trio.run(_serve_until_stopped, service, name, metrics, drain, exit_with_parent, metrics_tls)
    except Exception as exc:
        error = sole_error(exc)
        if isinstance(error, (CommandError, ConfigError)):
            raise error from None
        if isinstance(error, (SparrowError, OSError)):
            raise CommandError(str(error)) from None
        raise
    return 0
