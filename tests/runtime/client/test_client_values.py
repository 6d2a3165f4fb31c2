"""ClientLogic with values kept at node monitors (sans-I/O): dependents carry references and are placed
toward their holders, holds and releases, and lineage when a dependent's input was lost."""

from __future__ import annotations

import msgspec

from sparrow_runtime.client.job import Job, build_submit
from sparrow_runtime.data.dependent import is_remote, unpack_remote
from sparrow_runtime.errors import DependencyFailed, ValueLost
from sparrow_runtime.wire.messages import LOST_INPUT, Outcome, OutcomeToClient, ValueRef

from .test_client_logic import _dependent, _identity, add_and_flush, connected_logic, job_of, mixed_job


def _ref(node: str, key: bytes, size: int) -> ValueRef:
    return ValueRef(node, f"{node}:1", key * 16, size)


def _kept(ref_id: int, task: int, ref: ValueRef, last: bool = False) -> OutcomeToClient:
    return OutcomeToClient(ref_id, task, Outcome(True, ref=ref), last=last)


def _lost(ref_id: int, *refs: ValueRef) -> OutcomeToClient:
    lost = msgspec.msgpack.encode([r.key for r in refs])
    return OutcomeToClient(ref_id, 0, Outcome(False, lost, "input 0: the value ... is lost", LOST_INPUT), last=True)


A, B = _ref("nm-a", b"a", 1000), _ref("nm-b", b"b", 5000)


def test_a_dependent_of_kept_values_carries_their_references_toward_the_holder_of_most_bytes():
    """Both inputs kept: the dependent's payload is a remote call with the two references, its
    task_prefer lists nm-b (5000 bytes) before nm-a (1000); each value is held by its owner and the
    dependent, and once the dependent ended and the owners are forgotten both are released."""
    logic, _ = connected_logic()
    up = job_of(2)
    [msg] = add_and_flush(logic, up)
    dep = _dependent(logic, lambda a, b: a, (up, 0), (up, 1))
    [placed] = logic.on_messages([_kept(msg.ref, 0, A), _kept(msg.ref, 1, B, last=True)])
    assert is_remote(placed.tasks[0]) and unpack_remote(placed.tasks[0]).inputs == [A, B]
    assert placed.task_prefer == [("nm-b", "nm-a")]
    assert logic.values.holds == {A.key: 2, B.key: 2}
    logic.on_messages([OutcomeToClient(placed.ref, 0, Outcome(True, b"\x80\x05K\x01."), last=True)])
    assert dep.done() and logic.values.holds == {A.key: 1, B.key: 1} and logic.values.take() == []
    logic.forget(up, 0)
    logic.forget(up, 1)
    assert sorted(r.node_id for r in logic.values.take()) == ["nm-a", "nm-b"] and len(logic.values) == 0


def test_a_lost_input_is_recomputed_from_its_task_and_the_dependent_goes_again_with_the_new_value():
    """LOST_INPUT for A: the producer's own call goes out again as a job of one task; its new reference
    replaces the producer's outcome and the dependent is placed again with it."""
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    _dependent(logic, _identity, (up, 0))
    [placed] = logic.on_messages([_kept(msg.ref, 0, A, last=True)])
    [again] = logic.on_messages([_lost(placed.ref, A)])
    assert again.tasks == [b"t0"] and logic.recomputed == 1
    new = _ref("nm-c", b"c", 1000)
    [replaced] = logic.on_messages([_kept(again.ref, 0, new, last=True)])
    assert unpack_remote(replaced.tasks[0]).inputs == [new] and replaced.task_prefer == [("nm-c",)]
    assert up.outcomes[0].ref == new and logic.values.maker(new.key) == (up, 0)


def test_a_recompute_that_fails_fails_the_dependent_naming_the_input():
    """The producer's recompute raises: the dependent fails with DependencyFailed for args[0], whose
    cause is a ValueLost saying the recompute failed."""
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    dep = _dependent(logic, _identity, (up, 0))
    [placed] = logic.on_messages([_kept(msg.ref, 0, A, last=True)])
    [again] = logic.on_messages([_lost(placed.ref, A)])
    logic.on_messages([OutcomeToClient(again.ref, 0, Outcome(False, b"", "ZeroDivisionError"), last=True)])
    error = dep.exception(0)
    assert isinstance(error, DependencyFailed) and error.path == "args[0]"
    assert isinstance(error.__cause__, ValueLost) and "recomputing it failed" in str(error)


def test_without_attempts_left_a_lost_input_fails_the_dependent_naming_it():
    """retries=0: no recompute; DependencyFailed for the input's path with the node monitor's reason."""
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    dep = _dependent(logic, _identity, (up, 0))
    dep.retries = 0
    [placed] = logic.on_messages([_kept(msg.ref, 0, A, last=True)])
    assert logic.on_messages([_lost(placed.ref, A)]) == []
    error = dep.exception(0)
    assert isinstance(error, DependencyFailed) and error.path == "args[0]" and "is lost" in str(error)
    assert logic.recomputed == 0


def test_closing_releases_every_value_still_held():
    """close() hands every held reference over for release."""
    logic, _ = connected_logic()
    up = job_of(2)
    [msg] = add_and_flush(logic, up)
    logic.on_messages([_kept(msg.ref, 0, A), _kept(msg.ref, 1, B, last=True)])
    logic.close()
    assert sorted(r.key for r in logic.values.take()) == [A.key, B.key]


def test_the_recompute_of_a_task_of_a_job_with_per_task_settings_takes_that_tasks_own():
    """Task 1 of a job with per-task constraints and preferences is recomputed as a job of one task
    with task 1's constraint and preference only."""
    from sparrow_runtime import Constraint

    logic, _ = connected_logic()
    constraints = [Constraint(labels=("a",)), Constraint(labels=("b",))]
    payloads = [b"t0", b"t1"]
    up = Job(build_submit(payloads, "", 0, None, constraints, prefer=[["nm-a"], ["nm-b"]]), payloads)
    [msg] = add_and_flush(logic, up)
    _dependent(logic, _identity, (up, 1))
    logic.on_messages([OutcomeToClient(msg.ref, 0, Outcome(True, b"\x80\x05N."))])
    [placed] = logic.on_messages([_kept(msg.ref, 1, B, last=True)])
    [again] = logic.on_messages([_lost(placed.ref, B)])
    assert again.tasks == [b"t1"] and again.task_constraints == [constraints[1]]
    assert again.task_prefer == [("nm-b",)]


def test_the_recompute_of_a_task_of_a_job_of_per_task_requests_asks_for_that_tasks_own():
    """Task 1 of a job whose tasks ask for different resources is recomputed asking for task 1's."""
    logic, _ = connected_logic()
    up = mixed_job([None, {"gpu": 1}])
    plain, gpu = add_and_flush(logic, up)
    _dependent(logic, _identity, (up, 1))
    logic.on_messages([OutcomeToClient(plain.ref, 0, Outcome(True, b"\x80\x05N."), last=True)])
    [placed] = logic.on_messages([_kept(gpu.ref, 0, B, last=True)])
    [again] = logic.on_messages([_lost(placed.ref, B)])
    assert (again.tasks, again.resources) == ([b"t1"], {"gpu": 1})
