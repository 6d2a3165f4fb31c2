"""Flag types of the `sparrow experiment` commands: read as the other commands' settings are (config.py); the
flags every experiment shares, and the local cluster they describe."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..services.config import NodeMonitorConfig, SchedulerConfig
from ..services.local_cluster import LocalCluster
from .config import Kind, integer, number


def flag(kind: Kind) -> Callable[[str], object]:
    """An argparse type that reads a flag as the other commands' settings do (config.py's kinds)."""

    def convert(text: str) -> object:
        try:
            return kind.from_text(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


POSITIVE_INT = flag(integer(1))
POSITIVE_NUMBER = flag(number(0.0, open_low=True))


def add_cluster_flags(
    p: argparse.ArgumentParser,
    *,
    arrive: str,
    load: float,
    schedulers: int,
    node_monitors: int,
    slots: int,
    time_scale: float = 1.0,
    executor: str = "process",
) -> None:
    """The flags every experiment shares past --runs and --seconds: the load, the cluster, the time scale,
    the executors, the first seed and the log level (`arrive`: what arrives, for the help)."""
    p.add_argument(
        "--load",
        metavar="FRACTION",
        type=flag(number(0.0, 1.0, open_low=True)),
        default=load,
        help=f"offered load, a fraction of the slots ({arrive} arrive at the rate that offers it)",
    )
    p.add_argument(
        "--schedulers", metavar="N", type=POSITIVE_INT, default=schedulers, help="schedulers, and as many clients"
    )
    p.add_argument("--node-monitors", metavar="N", type=POSITIVE_INT, default=node_monitors, help="node monitors")
    p.add_argument("--slots", metavar="N", type=POSITIVE_INT, default=slots, help="slots per node monitor")
    p.add_argument(
        "--time-scale", metavar="X", type=POSITIVE_NUMBER, default=time_scale, help="multiplies every task duration"
    )
    p.add_argument("--executor", choices=("process", "thread"), default=executor, help="node monitors' executors")
    p.add_argument("--seed", metavar="N", type=int, default=0, help="seed of the first run (run i: seed + i)")
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="warning",
        help="of the command and its cluster's services",
    )


def experiment_cluster(args: argparse.Namespace, **node_settings: Any) -> LocalCluster:
    """The local cluster `add_cluster_flags`' flags describe (not started), its node monitors with `node_settings`
    (NodeMonitorConfig fields, e.g. steal) too. Binding to idle node monitors is off: the simulator that predicts
    each run has no rule for it."""
    return LocalCluster(
        args.schedulers,
        args.node_monitors,
        args.slots,
        node_monitor=NodeMonitorConfig(executor=args.executor, **node_settings),
        scheduler=SchedulerConfig(bind_idle=False),
        log_level=args.log_level,
    )
