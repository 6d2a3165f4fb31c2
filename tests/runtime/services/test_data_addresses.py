"""Node monitors tell their data address at registration, and the scheduler passes it to clients that ask
(StatusReply.nodes), where Client.scatter chooses a node monitor to upload to; sans-I/O, no network."""

from __future__ import annotations

import msgspec

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import Message, RegisterNodeMonitor


def test_a_node_monitors_registration_carries_its_data_address():
    """The registration names the data listener the node monitor's references name (its `holder`)."""
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=2))
    logic.holder = ("nm0", "127.0.0.1:4100")
    reg = logic.registration("nm0", instance="p1")
    assert reg.data_address == "127.0.0.1:4100" and reg.steal_address == ""


def test_the_scheduler_tells_each_node_monitors_data_address_in_its_status():
    """Two node monitors, one of an older version (no data address): the status has both, the old one's
    address empty (a client uploads to the other); the address survives a re-registration."""
    scheduler = SchedulerLogic(seed=1)
    scheduler.on_node_messages("a", [RegisterNodeMonitor("nm0", 1, instance="p0", data_address="127.0.0.1:4100")])
    scheduler.on_node_messages("b", [RegisterNodeMonitor("nm1", 1, instance="p1")])
    nodes = {n.node_id: n.data_address for n in scheduler.status().nodes}
    assert nodes == {"nm0": "127.0.0.1:4100", "nm1": ""}


def test_a_registration_without_the_trailing_data_address_still_decodes():
    """The field is a trailing default: a registration encoded without it (as before) decodes with ""."""
    full = msgspec.msgpack.encode(RegisterNodeMonitor("nm0", 1, (), "p0", False, ""))
    older = msgspec.msgpack.decode(full)
    older.pop()  # data_address
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(older), type=Message)
    assert decoded == RegisterNodeMonitor("nm0", 1, (), "p0", False, "") and decoded.data_address == ""
