"""OutcomePace: a node monitor holds outcomes to share a write only while they come closer than its hold delay,
and the service's `_may_wait` follows it."""

from __future__ import annotations

import trio

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor import HOLD_DELAY, NodeMonitorService
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.outcome_pace import OutcomePace
from sparrow_runtime.services.worker_pool import ThreadExecutor
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import EnqueueReservations, GetTask, Outcome, OutcomeToScheduler, TaskToNode

from ..manual_clock import ManualClock


def test_outcomes_closer_than_the_delay_are_close_and_sparser_ones_are_not() -> None:
    clock = ManualClock()
    pace = OutcomePace(0.001, clock)
    assert pace.close  # nothing measured yet: hold, as before
    for _ in range(40):
        pace.outcome()
        clock.now += 0.0002
    assert pace.close
    for _ in range(40):  # one slot of 1 ms tasks: an outcome every 1.05 ms
        pace.outcome()
        clock.now += 0.00105
    assert not pace.close


def test_a_long_idle_spell_counts_as_twice_the_delay_so_a_burst_after_it_holds_again_soon() -> None:
    clock = ManualClock()
    pace = OutcomePace(0.001, clock)
    for _ in range(40):
        pace.outcome()
        clock.now += 0.00105
    clock.now += 60.0
    pace.outcome()
    assert not pace.close and pace.mean <= 2 * 0.001
    burst = 0
    while not pace.close and burst < 8:  # then outcomes of one read: no time between them
        pace.outcome()
        burst += 1
    assert pace.close


def test_a_node_monitor_holds_nothing_while_its_outcomes_come_further_apart_than_its_hold() -> None:
    """With a task bound ahead, an outcome and a GetTask may wait (they come close); once the node's outcomes
    come further apart than HOLD_DELAY they go at once: the next would not join them before the hold ends."""

    async def main() -> None:
        clock = ManualClock()
        logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline="always", pipeline_depth=2), clock=clock)
        logic.on_scheduler_registered("s")
        async with trio.open_nursery() as nursery:
            service = NodeMonitorService(logic, ThreadExecutor(1), nursery, link=LinkConfig(secret=b"s"), node_id="nm")
            service._pace = OutcomePace(HOLD_DELAY, clock)
            logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 3)])
            logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
            logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
            assert len(logic.bound) == 1
            done = OutcomeToScheduler(1, 0, Outcome(True, b"", ""))
            assert service._may_wait(done) and service._may_wait(GetTask(1))
            for _ in range(40):
                service._pace.outcome()
                clock.now += 1.05 * HOLD_DELAY
            assert not service._may_wait(done) and not service._may_wait(GetTask(1))

    trio.run(main)
