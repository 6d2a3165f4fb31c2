"""Tasks a scheduler sends unasked with their reservations (TaskToNode.bound) in NodeMonitorLogic, sans-I/O: one
starts at once in a free slot, waits bound for a slot when the node monitor is busy after all (ahead of its
queue), and a forced cancel or its scheduler's loss ends it unstarted; with or without pipelining."""

from __future__ import annotations

import pytest

from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import MAX_PIPELINE_DEPTH, NodeMonitorLogic
from sparrow_runtime.wire.messages import (
    CANCELLED,
    EnqueueReservations,
    Error,
    GetTask,
    Outcome,
    OutcomeToScheduler,
    StopTask,
    TaskToNode,
)

from ..manual_clock import ManualClock

OK = Outcome(True, b"", "")


def _node(slots: int = 1, pipeline: str = "off", store: ValueStore | None = None) -> NodeMonitorLogic:
    # off, or always (pipelining's mechanics from the first task; the gate waits for tasks that ran short here)
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, pipeline=pipeline, pipeline_depth=1, inline_limit=4),
        clock=ManualClock(0.0),
        store=store,
    )
    logic.on_scheduler_registered("s")
    return logic


def _bound(job: int, task: int, user: str = "u", session: str = "c1") -> TaskToNode:
    return TaskToNode(job, task, b"p", 0.0, True, user, session)


def _of(out: list, kind: type) -> list:
    return [msg for _, msg in out if type(msg) is kind]


@pytest.mark.parametrize("pipeline", ["off", "always"])
def test_a_task_sent_unasked_to_a_free_slot_starts_at_once_without_a_get_task(pipeline: str) -> None:
    """1 slot, idle: the bound task and one more reservation of its job arrive together: the task goes to
    the executor at once and the reservation waits (no GetTask while the slot is busy, pipelining off)."""
    logic = _node(pipeline=pipeline)
    out = logic.on_scheduler_messages("s", [_bound(1, 0), EnqueueReservations(1, "u", 0, 1)])
    assert _of(out, TaskToNode) == [_bound(1, 0)] and logic.running == 1 and logic.free == 0
    assert _of(out, GetTask) == ([GetTask(1)] if pipeline != "off" else [])  # pipelined: asks ahead for the next one
    assert logic.stats["bound_unasked"] == 1


def test_a_task_sent_unasked_to_a_busy_node_monitor_waits_for_the_slot_ahead_of_its_queue() -> None:
    """A stale idle belief: the slot runs another scheduler's job's task and a reservation of job 2 is
    queued; the bound task of job 7 waits (nothing launched, no GetTask), then takes the slot the moment
    it frees, before the queued reservation asks; that one asks when the bound task ends."""
    logic = _node()
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    assert logic.on_scheduler_messages("s", [_bound(7, 0)]) == []
    assert len(logic.bound) == 1 and logic.busy == 2
    out = logic.on_task_done("s", 2, 0, OK)
    assert out == [("s", OutcomeToScheduler(2, 0, OK)), ("s", _bound(7, 0))]
    out = logic.on_task_done("s", 7, 0, OK)
    assert out == [("s", OutcomeToScheduler(7, 0, OK)), ("s", GetTask(2))]


def test_a_forced_cancel_of_a_waiting_unasked_task_reports_it_cancelled_once_and_it_never_starts() -> None:
    """Busy slot, a bound task waiting: StopTask for it answers CANCELLED at once; the slot that frees then
    launches nothing (no second outcome can come for it)."""
    logic = _node()
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    logic.on_scheduler_messages("s", [_bound(7, 3)])
    out = logic.on_scheduler_messages("s", [StopTask(7, 3)])
    assert [(m.job_id, m.task, m.outcome.failure) for m in _of(out, OutcomeToScheduler)] == [(7, 3, CANCELLED)]
    assert _of(logic.on_task_done("s", 2, 0, OK), TaskToNode) == [] and logic.free == 1


def test_the_loss_of_its_scheduler_drops_a_waiting_unasked_task_unstarted() -> None:
    """Scheduler "t" is lost while its bound task waits behind a busy slot: it never starts (its scheduler
    fails it as the loss of a running task), and the slot goes to the next reservation."""
    logic = _node()
    logic.on_scheduler_registered("t")
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 2)])
    logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    logic.on_scheduler_messages("t", [_bound(5, 0)])
    logic.on_scheduler_lost("t")
    assert not logic.bound
    out = logic.on_task_done("s", 2, 0, OK)
    assert _of(out, TaskToNode) == [] and _of(out, GetTask) == [GetTask(2)]


def test_a_big_result_of_an_unasked_task_is_kept_under_the_user_and_session_it_came_with() -> None:
    """With a store, the bound task's result over the inline limit is kept tagged with the user and client
    session the TaskToNode carried (no EnqueueReservations told them), so ReleaseSession finds it."""
    store = ValueStore(1 << 20)
    logic = _node(store=store)
    logic.on_scheduler_messages("s", [_bound(1, 0, user="alice", session="client-9")])
    out = logic.on_task_done("s", 1, 0, Outcome(True, b"x" * 100, ""))
    (reported,) = _of(out, OutcomeToScheduler)
    assert reported.outcome.ref is not None
    assert store.release_session("client-9") == 1


def test_unasked_tasks_past_the_limit_are_a_protocol_error_and_those_before_it_stay() -> None:
    """A scheduler that sends more unasked tasks than slots x (MAX_PIPELINE_DEPTH + 1) while they wait is
    answered Error (its link closes); the ones before the limit still wait, bound."""
    logic = _node()
    logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    limit = MAX_PIPELINE_DEPTH + 1
    out = logic.on_scheduler_messages("s", [_bound(7, t) for t in range(limit + 1)])
    (error,) = _of(out, Error)
    assert "unasked" in error.reason and str(limit) in error.reason
    assert len(logic.bound) == limit
