"""A scattered value in the client logic (ClientLogic.uploaded, client/scatter.prepare), sans-I/O: held as a
task's result is, passed to dependents by reference toward its holder, put back from its lineage when lost,
and failing its dependents with the upload's error or ValueLost when it cannot be."""

from __future__ import annotations

import cloudpickle

from sparrow_runtime.client.job import Job
from sparrow_runtime.client.scatter import prepare
from sparrow_runtime.data.dependent import unpack_remote
from sparrow_runtime.errors import DependencyFailed, UploadFailed, ValueLost
from sparrow_runtime.wire.messages import Outcome, OutcomeToClient

from .test_client_logic import _dependent, _identity, connected_logic, job_of
from .test_client_values import _lost, _ref

A = _ref("nm-a", b"a", 300_000)


def _scattered(logic, value, keep: bool = True) -> Job:
    """An upload job of `value`, added, taken by the shell and uploaded (its reference A)."""
    [job], [data] = prepare([value], _job, keep)
    assert cloudpickle.loads(data) == value and job.upload
    logic.add(job)
    assert logic.take_uploads() == [job] and logic.flush() == []  # never placed
    logic.uploaded(job, A)
    return job


def _job(payloads) -> Job:
    job = job_of(1)
    job.payloads[:] = payloads
    return job


def test_a_scattered_value_is_held_by_its_owner_and_its_dependent_goes_toward_its_holder_by_reference():
    """uploaded(): the job's one outcome is the reference, an event for its owner, held once; a dependent
    is placed at once with the reference (not the value) and prefers nm-a; it holds the value until it ends,
    then forgetting the owner releases it."""
    logic, _ = connected_logic()
    up = _scattered(logic, b"v" * 10)
    assert up.outcomes[0] == Outcome(True, ref=A) and logic.take_events() == [(up, 0)]
    assert logic.values.holds == {A.key: 1} and logic.unfinished == 0
    _dependent(logic, _identity, (up, 0))
    [placed] = logic.flush()
    assert unpack_remote(placed.tasks[0]).inputs == [A] and placed.task_prefer == [("nm-a",)]
    logic.forget(up, 0)
    assert logic.values.take() == []  # the dependent holds it
    logic.on_messages([OutcomeToClient(placed.ref, 0, Outcome(True, b"\x80\x05K\x01."), last=True)])
    assert logic.values.take() == [A] and len(logic.values) == 0


def test_a_lost_scattered_value_is_uploaded_again_from_its_bytes_not_sent_to_the_scheduler():
    """LOST_INPUT for it: nothing goes to the scheduler; an upload job of the same bytes waits for the shell;
    once it is uploaded its new reference replaces the old one and the dependent goes again with it. A
    connection made meanwhile (a failover) does not place the upload job."""
    logic, clock = connected_logic()
    up = _scattered(logic, {"frame": list(range(5))})
    _dependent(logic, _identity, (up, 0))
    [placed] = logic.flush()
    assert logic.on_messages([_lost(placed.ref, A)]) == [] and logic.recomputed == 1
    [again] = logic.take_uploads()
    assert again.upload and cloudpickle.loads(again.payloads[0]) == {"frame": list(range(5))}
    logic.lost("gone", clock())
    assert logic.connected("s2", clock()) == []  # neither the held dependent nor the upload is placed
    new = _ref("nm-c", b"c", 300_000)
    logic.uploaded(again, new)
    [replaced] = logic.flush()
    assert unpack_remote(replaced.tasks[0]).inputs == [new] and up.outcomes[0].ref == new


def test_without_its_bytes_kept_a_lost_scattered_value_fails_its_dependent_naming_it():
    """keep=False: no lineage, so LOST_INPUT fails the dependent with DependencyFailed (args[0], ValueLost)."""
    logic, _ = connected_logic()
    up = _scattered(logic, b"v", keep=False)
    assert up.payloads == [None]
    dep = _dependent(logic, _identity, (up, 0))
    [placed] = logic.flush()
    assert logic.on_messages([_lost(placed.ref, A)]) == []
    error = dep.exception(0)
    assert isinstance(error, DependencyFailed) and error.path == "args[0]" and isinstance(error.__cause__, ValueLost)
    assert logic.recomputed == 0


def test_a_failed_upload_is_the_jobs_one_outcome_and_fails_its_dependents_with_it():
    """uploaded(job, UploadFailed): not ok, its exception the UploadFailed itself; a dependent fails with
    DependencyFailed whose cause it is; nothing is held."""
    logic, _ = connected_logic()
    [up], _ = prepare([b"v"], _job, True)
    logic.add(up)
    failure = UploadFailed("node monitor nm-a refused the upload of 300,000 bytes: full")
    logic.uploaded(up, failure)
    assert not up.outcomes[0].ok and up.exception(0) is failure and len(logic.values) == 0
    dep = _dependent(logic, _identity, (up, 0))
    error = dep.exception(0)
    assert isinstance(error, DependencyFailed) and "refused the upload" in str(error)
