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
    host, port = s["listen"]
    options = {
        "scheduler_id": s["id"] or default_id(port),
        "probe_ratio": s["probe_ratio"],
        "bind_idle": s["bind_idle"],
        "seed": s["seed"],
        "placement_timeout": s["placement_timeout"],
        "max_client_tasks": s["max_client_tasks"],
        "client_grace": s["client_grace"],
        "max_frame": s["max_frame"],
    }
    where = metrics_address(s)
    if where is None:
        logic, sampler, metrics = SchedulerLogic(**options), None, None
    else:  # the metrics port also serves the dashboard, which works without prometheus-client
        logic, sampler, dashboard = scheduler_with_dashboard(**options)
        metrics = (logic.registry, *where, dashboard)
    credentials = prepare_service(s, "scheduler")
    service: Callable[..., Awaitable[None]] = partial(
        serve_scheduler,
        host,
        port,
        **credentials,
        node_monitors=s["node_monitor"],
        node_timeout=s["node_timeout"],
        client_timeout=s["client_timeout"],
        max_frame=s["max_frame"],
        result_delay=s["result_delay"],
        logic=logic,
    )
    if sampler is not None:
        service = sampler.alongside(service)
    return run_service(
        service,
        "scheduler",
        metrics,
        exit_with_parent=s["exit_with_parent"],
        metrics_tls=metrics_tls(s, credentials),
    )
