"""The one chokepoint where the services' metrics observe their logic (instruments.observed): every
step of both logics passes through it, a step added to a logic later is observed with no change to
metrics.py, and an instrument that raises is removed and logged while the logic goes on."""

from __future__ import annotations

import inspect
import logging

import prometheus_client

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.instruments import observed
from sparrow_runtime.services.metrics import (
    NODE_MONITOR_STEPS,
    MeteredNodeMonitorLogic,
    MeteredSchedulerLogic,
    NodeMonitorMetrics,
)
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import EnqueueReservations

# the public methods of each logic that only read its state (or make a message from it): not steps
READ_ONLY = {
    SchedulerLogic: {"status", "tasks"},
    NodeMonitorLogic: {"registration", "heartbeat", "give_back_at", "ask_ahead_at", "overrun_after"},
}
# the face each logic offers its collaborators (steal_logic.StealHost): called only from within a step (a message
# handled, a steal answered), which the chokepoint observes whole. The scheduler's parts are hosted by their own
# objects (give-back by its placement part), not by the facade: it offers none.
HOST_FACE = {
    SchedulerLogic: set(),
    NodeMonitorLogic: {
        "idle",
        "jobs_of",
        "scheduler_jobs",
        "new_entry",
        "add_key",
        "drop_key",
        "entry_at",
        "forget_if_idle",
        "enqueue",
        "fill",
    },
}


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and not isinstance(inspect.getattr_static(cls, name), property) and callable(member)
    }


def test_every_method_that_changes_a_logic_passes_through_the_observed_chokepoint():
    """Each public method of both logics is a step of its metered logic (goes through observed's
    chokepoint) or is listed as read-only or as its collaborators' face here: a method added to a logic fails
    this test until it is one or the other (the node monitor's on_registration_reply and on_timer were once neither)."""
    for logic, metered in ((SchedulerLogic, MeteredSchedulerLogic), (NodeMonitorLogic, MeteredNodeMonitorLogic)):
        unobserved = {
            name
            for name in public_methods(logic)
            if not getattr(metered, name).__qualname__.startswith(f"Observed{logic.__name__}.")
        }
        assert unobserved == READ_ONLY[logic] | HOST_FACE[logic], logic.__name__


def test_a_step_added_to_the_logic_later_is_observed_with_no_change_to_metrics():
    """A new on_* method of NodeMonitorLogic (here one that takes a slot away) moves the busy-slots
    gauge at once: the metrics observe the step without knowing it."""

    class NewerNodeMonitorLogic(NodeMonitorLogic):
        def on_slot_lost(self) -> list:
            self.free -= 1
            return []

    registry = prometheus_client.CollectorRegistry()
    logic = observed(NewerNodeMonitorLogic, also=NODE_MONITOR_STEPS)(NodeMonitorConfig(slots=3))
    logic.instruments.append(NodeMonitorMetrics(registry, logic))
    assert logic.on_slot_lost() == []
    assert registry.get_sample_value("sparrow_node_busy_slots") == 1


def test_an_instrument_that_raises_is_removed_and_logged_and_the_logic_goes_on(caplog):
    """A broken instrument of the node monitor's logic: the step still returns its messages, the
    instrument is dropped with an ERROR naming it, and the metrics beside it still see the step."""

    class Broken:
        def step(self, event, args, out):
            raise ValueError("broken instrument")

    registry = prometheus_client.CollectorRegistry()
    logic = MeteredNodeMonitorLogic(registry, config=NodeMonitorConfig(slots=2))
    broken = Broken()
    logic.instruments.insert(0, broken)
    logic.on_scheduler_registered("s")
    with caplog.at_level(logging.ERROR, logger="sparrow_runtime.services.instruments"):
        out = logic.on_scheduler_messages("s", [EnqueueReservations(1, "", 0, 5)])
    assert len(out) == 2 and broken not in logic.instruments
    assert "broken instrument" in caplog.text and "raised in step and was removed" in caplog.text
    assert registry.get_sample_value("sparrow_node_queue_length") == 3
