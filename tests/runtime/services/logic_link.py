"""One SchedulerLogic and one NodeMonitorLogic joined without a network, for tests of what reaches the client.

`link(scheduler, monitor)` returns the list of what the scheduler says to client "c" and `deliver(out, source)`,
which carries `out` (a list of (peer, message) from `source`: "scheduler" or "monitor") to the other side, and
each side's replies back, until neither has more to say. The node monitor is "nm" to the scheduler and knows the
scheduler as "s"; what the node monitor says to its executor (TaskToNode, Stop, Withdraw) goes nowhere."""

from __future__ import annotations

from collections.abc import Callable

from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic, Stop, Withdraw
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import TaskToNode

FOR_THE_EXECUTOR = (TaskToNode, Stop, Withdraw)


def link(scheduler: SchedulerLogic, monitor: NodeMonitorLogic) -> tuple[list, Callable[..., None]]:
    to_client: list = []

    def deliver(out: list, source: str = "scheduler") -> None:
        queue = [(source, msg, peer) for peer, msg in out]
        while queue:
            source, msg, peer = queue.pop(0)
            if source == "scheduler" and peer == "c":
                to_client.append(msg)
            elif source == "scheduler":
                queue += [("monitor", m, p) for p, m in monitor.on_scheduler_messages("s", [msg])]
            elif type(msg) not in FOR_THE_EXECUTOR:
                queue += [("scheduler", m, p) for p, m in scheduler.on_node_messages("nm", [msg])]

    return to_client, deliver
