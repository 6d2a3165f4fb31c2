"""How a scheduler process gets its dashboard: the logic to drive, and what its HTTP server serves."""

from __future__ import annotations

from typing import Any

from ..services.metrics import MeteredSchedulerLogic, registry_if_available
from .app import DashboardApp
from .sampler import Sampler


def scheduler_with_dashboard(**options: Any) -> tuple[MeteredSchedulerLogic, Sampler, DashboardApp]:
    """A scheduler's logic (SchedulerLogic `options`) with Prometheus metrics when prometheus-client is
    installed, the sampler to run beside the service (`sampler.alongside(service)`), and the
    dashboard app to pass to `http_server.serve_metrics(logic.registry, host, port, app)`."""
    logic = MeteredSchedulerLogic(registry_if_available(), **options)
    sampler = Sampler(logic)
    return logic, sampler, DashboardApp(sampler)
