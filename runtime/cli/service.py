"""Running one service in the foreground (`sparrow scheduler`, `sparrow node-monitor`): logs,
optional metrics, and a clean stop on SIGTERM or SIGINT (a node monitor drains first)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable

import trio

from ..address import format_address
from .config import Resolved
from ..metrics import new_registry, serve_metrics
from ..node_monitor_logic import NodeMonitorLogic

logger = logging.getLogger("sparrow_runtime.cli")

DRAIN_POLL = 0.02  # seconds between checks of a draining node monitor's busy slots


def service_logic(s: Resolved, plain: type, metered: type, **options) -> tuple[object, tuple | None]:
    """The logic of a service (`plain(**options)`), or with `--metrics-port` its metered subclass and
    `(registry, port, None)` for `run_service`."""
    if s["metrics_port"] is None:
        return plain(**options), None
    registry = new_registry()
    return metered(registry, **options), (registry, s["metrics_port"], None)


def node_monitor_drain(
    logic: NodeMonitorLogic, start: trio.Event, timeout: float
) -> Callable[[], Awaitable[None]]:
    """A drain step for `run_service`: set `start` (the node monitor's `drain` event: it takes no more
    reservations and tells its schedulers), then wait (at most `timeout` seconds) until the tasks
    running or asked for have finished and been reported."""

    async def drain() -> None:
        start.set()
        with trio.move_on_after(timeout):
            while logic.busy:
                await trio.sleep(DRAIN_POLL)
        if logic.busy:
            logger.warning("%d tasks still running after %g s: stopping them (reported failed)", logic.busy, timeout)

    return drain


async def _serve_until_signal(
    service: Callable, name: str, metrics: tuple | None, drain: Callable[[], Awaitable[None]] | None
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            address = await nursery.start(service)
            lines = [f"sparrow {name}: listening on {format_address(address)}"]
            if metrics is not None:
                registry, port, pages = metrics
                url = "http://" + format_address(serve_metrics(registry, address[0], port, pages))
                if registry is not None:
                    lines[0] += f", metrics on {url}/metrics"
                if pages is not None:
                    lines.append(f"sparrow {name}: dashboard on {url}/")
            for line in lines:
                logger.info(line.removeprefix("sparrow "))
            print("\n".join(lines), flush=True)
            async for signum in signals:
                logger.info("%s received: stopping", signal.Signals(signum).name)
                break
            if drain is not None:
                async with trio.open_nursery() as draining:  # a second signal stops at once
                    draining.start_soon(_cancel_on_next, signals, draining.cancel_scope)
                    await drain()
                    draining.cancel_scope.cancel()
            nursery.cancel_scope.cancel()


async def _cancel_on_next(signals, scope: trio.CancelScope) -> None:
    async for signum in signals:
        logger.warning("%s received again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return


def run_service(
    service: Callable,
    name: str,
    metrics: tuple | None = None,
    drain: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """Run `service` (a `serve_...` partial) until SIGTERM or SIGINT; print its address once ready.

    `metrics` (optional): `(registry, port, pages)` for `serve_metrics` on the service's host once it
    is listening (registry None: no Prometheus metrics; pages: the scheduler's dashboard, or None).
    `drain` (optional): awaited after the first signal, before the service is cancelled.
    """
    trio.run(_serve_until_signal, service, name, metrics, drain)
    return 0
