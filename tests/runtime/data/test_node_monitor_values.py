"""NodeMonitorLogic with a value store (sans-I/O): which results stay, what their references say, who owns
them, and ReleaseSession; and the scheduler tagging reservations with the client session."""

from __future__ import annotations

from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    TOO_LARGE,
    EnqueueReservations,
    Outcome,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    ReleaseSession,
    SubmitJob,
    TaskToNode,
)


def _node(limit: int = 10_000) -> NodeMonitorLogic:
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, inline_limit=100), store=ValueStore(limit))
    logic.holder = ("nm-7", "127.0.0.1:4000")
    logic.on_scheduler_registered("s")
    return logic


def _run(logic: NodeMonitorLogic, job: int, outcome: Outcome, user: str = "alice", session: str = "c1") -> Outcome:
    """Reserve, launch and finish one task of `job` with `outcome`; the outcome reported to the scheduler."""
    logic.on_scheduler_messages("s", [EnqueueReservations(job, user, 0, 1, session)])
    logic.on_scheduler_messages("s", [TaskToNode(job, 0, b"task")])
    out = logic.on_task_done("s", job, 0, outcome)
    return next(msg.outcome for _, msg in out if type(msg) is OutcomeToScheduler)


def test_a_result_over_the_inline_limit_is_kept_with_its_owner_and_the_outcome_refers_to_it():
    """101 bytes (limit 100): kept under a new key, tagged with the job's user and session; the outcome is
    ok with an empty payload and a reference naming this node monitor, its data address and the size.
    100 bytes and failures travel as they are."""
    logic = _node()
    kept = _run(logic, 1, Outcome(True, b"x" * 101))
    assert kept.ok and kept.payload == b"" and kept.ref is not None
    assert (kept.ref.node_id, kept.ref.address, kept.ref.size) == ("nm-7", "127.0.0.1:4000", 101)
    entry = logic.store.get(kept.ref.key)
    assert (entry.value, entry.user, entry.session) == (b"x" * 101, "alice", "c1")
    assert _run(logic, 2, Outcome(True, b"y" * 100)) == Outcome(True, b"y" * 100)
    assert _run(logic, 3, Outcome(False, b"e" * 500, "boom")) == Outcome(False, b"e" * 500, "boom")
    assert len(logic.store) == 1 and logic.owners == {} and logic.stats["values_kept"] == 1


def test_a_full_store_fails_the_outcome_not_retried_and_the_slot_is_freed():
    """Past the memory limit the result is refused: a TOO_LARGE outcome naming the sizes; the next task runs."""
    logic = _node(limit=150)
    _run(logic, 1, Outcome(True, b"x" * 120))
    refused = _run(logic, 2, Outcome(True, b"x" * 120))
    assert not refused.ok and refused.failure == TOO_LARGE and "120 of 150 bytes held" in refused.error
    assert logic.free == 1 and logic.stats["values_refused"] == 1


def test_release_session_drops_that_clients_values_only():
    """ReleaseSession("c1") from the scheduler drops c1's values and keeps c2's."""
    logic = _node()
    mine = [_run(logic, job, Outcome(True, b"m" * 200), session="c1").ref for job in (1, 2)]
    theirs = _run(logic, 3, Outcome(True, b"t" * 200), session="c2").ref
    logic.on_scheduler_messages("s", [ReleaseSession("c1")])
    assert [logic.store.get(r.key) for r in mine] == [None, None]
    assert logic.store.get(theirs.key) is not None and logic.stats["values_released"] == 2


def test_release_session_of_a_user_keeps_another_users_values_of_that_session():
    """ReleaseSession("c1", "bob"): bob's client claimed alice's id c1 elsewhere; only bob's values go."""
    logic = _node()
    alices = _run(logic, 1, Outcome(True, b"a" * 200), user="alice", session="c1").ref
    bobs = _run(logic, 2, Outcome(True, b"b" * 200), user="bob", session="c1").ref
    logic.on_scheduler_messages("s", [ReleaseSession("c1", "bob")])
    assert logic.store.get(bobs.key) is None and logic.store.get(alices.key) is not None
    assert logic.stats["values_released"] == 1


def test_the_scheduler_tags_each_reservation_with_the_jobs_client_id():
    """A job's EnqueueReservations carry the id its client connected with: the session of its values."""
    logic = SchedulerLogic(seed=1, bind_idle=False)
    logic.on_node_messages("n", [RegisterNodeMonitor("nm-1", 2)])
    logic.on_client_connected("c", "client-abc")
    out = logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    sessions = [msg.session for _, msg in out if type(msg) is EnqueueReservations]
    assert sessions == ["client-abc"]
