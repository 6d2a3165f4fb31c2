"""`sparrow node-monitor`: run a node monitor (and its executor) in the foreground on this host."""

from __future__ import annotations

import argparse
import logging
from functools import partial

import trio

from ..services.metrics import MeteredNodeMonitorLogic
from ..services.node_monitor import node_resources, serve_node_monitor
from ..services.node_monitor_logic import NodeMonitorLogic
from ..services.task_users import task_users
from .common import CommandError, add_command, prepare_service, settings
from .service import metrics_tls, node_monitor_drain, run_service, service_logic
from .service_config import node_monitor_config

logger = logging.getLogger(__name__)
SHARED_USER_WARNING = (
    "on TLS without --task-user: tasks run as this node monitor's user, so a task can read its key %s and "
    "connect as a node monitor, then take other users' tasks and fetch their kept values; set --task-user "
    "(docs/deploy.md, Network and security notes)"
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "node-monitor",
        run,
        help="run a node monitor on this host",
        description="Run a Sparrow node monitor until SIGTERM or Ctrl-C: it registers with every --scheduler, "
        "queues their reservations and runs tasks in its slots. Prints 'sparrow node-monitor: listening on HOST:PORT' "
        "once registered. SIGTERM or Ctrl-C drains it: running tasks finish and report (--drain-timeout), "
        "then it stops.",
    )


def run(args: argparse.Namespace) -> int:
    s = settings("node-monitor", args)
    if not s["scheduler"]:
        raise CommandError("no scheduler to register with: pass --scheduler HOST:PORT (or set SPARROW_SCHEDULER)")
    if s["task_user"] is not None:
        if s["executor"] != "process":
            raise CommandError("--task-user needs process executors (--executor process)")
        try:
            task_users(s["task_user"])
        except ValueError as exc:
            raise CommandError(f"--task-user: {exc}") from None
    resources = node_resources(s["resources"])  # detected before --cpus pins this process
    credentials = prepare_service(s, "node-monitor")
    if credentials.get("tls") is not None and s["task_user"] is None:
        logger.warning(SHARED_USER_WARNING, credentials["tls"].key)
    config = node_monitor_config(s, credentials)
    logic, metrics = service_logic(s, NodeMonitorLogic, MeteredNodeMonitorLogic, config=config, host=resources)
    draining = trio.Event()
    service = partial(serve_node_monitor, config, logic=logic, drain=draining)
    drain = node_monitor_drain(logic, draining, s["drain_timeout"])
    return run_service(
        service,
        "node-monitor",
        metrics,
        drain,
        exit_with_parent=s["exit_with_parent"],
        metrics_tls=metrics_tls(s, credentials),
    )
