"""`sparrow scheduler`: run a scheduler in the foreground on this host."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Awaitable, Callable
from functools import partial

from ..dashboard import scheduler_with_dashboard
from ..services.scheduler import serve_scheduler
from ..services.scheduler_logic import SchedulerLogic
from .common import add_command, prepare_service, settings
from .service import metrics_address, metrics_tls, run_service
from .service_config import scheduler_config


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "scheduler",
        run,
        help="run a scheduler on this host",
        description="Run a Sparrow scheduler until SIGTERM or Ctrl-C. Node monitors register with it; "
        "clients submit jobs to it. Prints 'sparrow scheduler: listening on HOST:PORT' once ready. Listens on "
        "loopback unless --listen says otherwise.",
    )


def default_id(port: int) -> str:
    """scheduler@HOST:PORT, or scheduler@HOST-PID when the port is picked at random."""
    return f"scheduler@{socket.gethostname()}" + (f":{port}" if port else f"-{os.getpid()}")


def run(args: argparse.Namespace) -> int:
    s = settings("scheduler", args)
    where = metrics_address(s)
    credentials = prepare_service(s, "scheduler")
    config = scheduler_config(s, credentials)
    options = config.logic_options(config.scheduler_id or default_id(config.port))
    if where is None:
        logic, sampler, metrics = SchedulerLogic(**options), None, None
    else:  # the metrics port also serves the dashboard, which works without prometheus-client
        logic, sampler, dashboard = scheduler_with_dashboard(metrics_users=config.metrics_users, **options)
        metrics = (logic.registry, *where, dashboard)
    service: Callable[..., Awaitable[None]] = partial(serve_scheduler, config, logic=logic)
    if sampler is not None:
        service = sampler.alongside(service)
    return run_service(
        service,
        "scheduler",
        metrics,
        exit_with_parent=s["exit_with_parent"],
        metrics_tls=metrics_tls(s, credentials),
    )
