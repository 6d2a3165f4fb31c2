"""Run one service as a process: `python -m sparrow_runtime.service_main scheduler|node-monitor [options]`.

Prints the bound address as one line "host:port" on stdout once the service is ready (a node monitor:
once registered with every --scheduler; a scheduler with --metrics-port: then its dashboard's URL on a
second line), then runs until SIGTERM or SIGINT (or, with
--exit-with-parent, until its standard input ends: the parent holding the pipe is gone, even if it
was killed outright), and exits 0. Logs go to
stderr. The secret comes from --secret-file, SPARROW_SECRET or SPARROW_SECRET_FILE, never from the
command line (where other users could read it). Used by LocalCluster; the user-facing `sparrow`
commands are built on the same services.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from functools import partial

import trio

from .address import format_address
from .auth import load_secret
from .cpus import parse_cpu_list, pin_process
from .dashboard import scheduler_with_dashboard
from .framing import DEFAULT_MAX_FRAME
from .logsetup import LOG_LEVELS, setup_logging
from .metrics import serve_metrics
from .node_monitor import DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_SCHEDULER_TIMEOUT, serve_node_monitor
from .node_monitor_logic import POLICIES
from .outcome_batching import DEFAULT_RESULT_DELAY, check_result_delay
from .scheduler import DEFAULT_NODE_TIMEOUT, serve_scheduler
from .scheduler_logic import DEFAULT_PROBE_RATIO


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sparrow_runtime.service_main")
    sub = parser.add_subparsers(dest="service", required=True)
    for name in ("scheduler", "node-monitor"):
        p = sub.add_parser(name)
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=0, help="0: any free port")
        p.add_argument("--id", dest="ident", default=None, help="this service's id")
        p.add_argument("--secret-file", default=None)
        p.add_argument("--max-frame", type=int, default=DEFAULT_MAX_FRAME)
        p.add_argument("--log-level", choices=LOG_LEVELS, default="warning")
        p.add_argument("--cpus", type=parse_cpu_list, default=None, help="run only on these CPUs, like 0-3,6")
        p.add_argument(
            "--exit-with-parent",
            action="store_true",
            help="stop when standard input reaches end of file (the parent holding the pipe is gone)",
        )
    s = sub.choices["scheduler"]
    s.add_argument("--probe-ratio", type=float, default=DEFAULT_PROBE_RATIO)
    s.add_argument("--node-monitor", action="append", default=[], help="address of a node monitor to dial")
    s.add_argument("--node-timeout", type=float, default=DEFAULT_NODE_TIMEOUT)
    s.add_argument("--seed", type=int, default=None)
    s.add_argument("--result-delay", type=_seconds, default=DEFAULT_RESULT_DELAY, help="seconds; 0: off")
    s.add_argument("--metrics-port", type=int, default=None, help="serve the dashboard (and metrics) here; 0: any")
    n = sub.choices["node-monitor"]
    n.add_argument("--scheduler", action="append", default=[], help="address of a scheduler to register with")
    n.add_argument("--slots", type=int, default=None, help="default: CPU count")
    n.add_argument("--label", action="append", default=[])
    n.add_argument("--policy", choices=POLICIES, default="fifo")
    n.add_argument("--weight", action="append", default=[], metavar="USER=WEIGHT")
    n.add_argument("--executor", choices=("process", "thread"), default="process")
    n.add_argument("--heartbeat-interval", type=float, default=DEFAULT_HEARTBEAT_INTERVAL)
    n.add_argument("--scheduler-timeout", type=float, default=DEFAULT_SCHEDULER_TIMEOUT)
    return parser


def _seconds(text: str) -> float:
    try:
        return check_result_delay(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}") from None


def parse_weights(items: list[str]) -> dict[str, float]:
    weights = {}
    for item in items:
        user, sep, value = item.rpartition("=")
        try:
            weights[user] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"--weight must be USER=WEIGHT with a number, got {item!r}")
    return weights


def make_service(args: argparse.Namespace):
    """The service to run, and `(registry, port, dashboard)` to serve once it listens, or None."""
    common = dict(host=args.host, port=args.port, secret_file=args.secret_file, max_frame=args.max_frame)
    if args.service == "scheduler":
        service = partial(
            serve_scheduler,
            **common,
            scheduler_id=args.ident,
            probe_ratio=args.probe_ratio,
            node_monitors=args.node_monitor,
            node_timeout=args.node_timeout,
            seed=args.seed,
            result_delay=args.result_delay,
        )
        if args.metrics_port is None:
            return service, None
        options = dict(scheduler_id=args.ident or "scheduler", probe_ratio=args.probe_ratio, seed=args.seed)
        logic, sampler, dashboard = scheduler_with_dashboard(**options)
        return sampler.alongside(partial(service, logic=logic)), (logic.registry, args.metrics_port, dashboard)
    return partial(
        serve_node_monitor,
        args.scheduler,
        **common,
        node_id=args.ident,
        slots=args.slots,
        labels=args.label,
        policy=args.policy,
        weights=parse_weights(args.weight),
        executor=args.executor,
        heartbeat_interval=args.heartbeat_interval,
        scheduler_timeout=args.scheduler_timeout,
    ), None


async def wait_for_parent_exit() -> None:
    """Returns once standard input reaches end of file: the parent holding its other end is gone."""
    fd = sys.stdin.fileno()
    while True:
        await trio.lowlevel.wait_readable(fd)
        if not os.read(fd, 4096):
            return


async def run(service, exit_with_parent: bool = False, http: tuple | None = None) -> None:
    async def stop_when(waiter) -> None:
        await waiter()
        nursery.cancel_scope.cancel()

    async def next_signal() -> None:
        async for _ in signals:
            return

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            address = await nursery.start(service)
            lines = [format_address(address)]
            if http is not None:  # the dashboard's URL, on a second line
                lines.append(f"http://{format_address(serve_metrics(http[0], address[0], *http[1:]))}/")
            print("\n".join(lines), flush=True)
            if exit_with_parent:
                nursery.start_soon(stop_when, wait_for_parent_exit)
            await stop_when(next_signal)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        secret = load_secret(None, args.secret_file)  # fail early and plainly on a missing secret
        setup_logging(args.log_level, secret=secret)
        if args.cpus is not None:
            pin_process(args.cpus)  # first: the executors' threads and processes inherit it
        service, http = make_service(args)
    except (ValueError, OSError) as exc:
        print(f"sparrow {args.service}: {exc}", file=sys.stderr)
        return 1
    trio.run(run, service, args.exit_with_parent, http)
    return 0


if __name__ == "__main__":
    sys.exit(main())
