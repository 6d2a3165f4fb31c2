"""The client's rules, sans-I/O on a fake clock (logic.py): placement and coalescing, retries, failover
and relaunch, cancel, close, status, protocol errors, and the one dependency engine that Client and
SparrowExecutor share. No network: messages in, messages and outcome events out."""

from __future__ import annotations

import gc
import pickle

import cloudpickle
import pytest

from sparrow_runtime.client.job import Job, build_submit, split_requests
from sparrow_runtime.client.logic import ClientLogic
from sparrow_runtime.client.task_inputs import find_inputs, pack_template
from sparrow_runtime.data.dependent import call_with_inputs
from sparrow_runtime.errors import DependencyFailed, ProtocolError, TaskCancelled, TaskFailed
from sparrow_runtime.wire.messages import (
    CANCELLED,
    SYSTEM,
    UNPLACEABLE,
    CancelJob,
    Heartbeat,
    JobAccepted,
    JobRejected,
    NoTask,
    Outcome,
    OutcomeToClient,
    StatusReply,
    SubmitJob,
)
from sparrow_runtime.wire.resources import ResourceError

from ..manual_clock import ManualClock


def job_of(n: int, *, retries: int = 3, retry_exceptions: bool = False, coalesce: bool = False, **settings) -> Job:
    payloads = [b"t%d" % i for i in range(n)]
    msg = build_submit(payloads, settings.pop("user", ""), settings.pop("priority", 0), None, None, **settings)
    return Job(msg, payloads, retries=retries, retry_exceptions=retry_exceptions, coalesce=coalesce)


def test_a_pending_job_makes_few_objects_for_the_garbage_collector():
    """The collector scans every tracked object of every pending job: where a job's tasks are placed is in dicts
    of numbers (never tracked), and its sets are one empty frozenset shared by all jobs until a task goes in."""
    job, other = job_of(3), job_of(1)
    logic, _ = connected_logic()
    logic.add(job)
    logic.flush()
    assert job.ref and not gc.is_tracked(job.ref) and not gc.is_tracked(job.at)
    assert job.held is other.held and job.cancelled_tasks is other.unowned  # one shared empty set
    job.hold([1])
    job.cancel_tasks([2])
    job.disown(0)
    job.unhold(5)  # not held: nothing happens
    assert (job.held, job.cancelled_tasks, job.unowned) == ({1}, {2}, {0})
    assert (other.held, other.cancelled_tasks, other.unowned) == (set(), set(), set())


def connected_logic(**kw) -> tuple[ClientLogic, ManualClock]:
    clock = ManualClock()
    logic = ClientLogic(**kw)
    assert logic.connected("s1", clock()) == []
    return logic, clock


def ok(ref: int, task: int, value=None, last: bool = False) -> OutcomeToClient:
    return OutcomeToClient(ref, task, Outcome(True, pickle.dumps(value)), last=last)


def failed(ref: int, task: int, failure: int = SYSTEM, last: bool = False) -> OutcomeToClient:
    return OutcomeToClient(ref, task, Outcome(False, b"", "it broke", failure=failure), last=last)


def raised(ref: int, task: int, exc: BaseException, last: bool = False) -> OutcomeToClient:
    return OutcomeToClient(ref, task, Outcome(False, cloudpickle.dumps(exc), "Traceback: ..."), last=last)


def events(logic: ClientLogic) -> list[tuple[Job, int]]:
    return logic.take_events()


def add_and_flush(logic: ClientLogic, *jobs: Job) -> list[SubmitJob]:
    for job in jobs:
        logic.add(job)
    return logic.flush()


# -- placement ------------------------------------------------------------------------------------


def test_a_job_goes_as_one_submit_and_its_outcomes_come_back_as_events_in_arrival_order():
    logic, _ = connected_logic()
    job = job_of(3)
    [msg] = add_and_flush(logic, job)
    assert msg.tasks == [b"t0", b"t1", b"t2"] and job.attempts == [1, 1, 1] and logic.unfinished == 3
    assert logic.on_messages([JobAccepted(msg.ref, 42), ok(msg.ref, 2, "c"), ok(msg.ref, 0, "a")]) == []
    assert job.job_id == 42 and events(logic) == [(job, 2), (job, 0)]
    logic.on_messages([ok(msg.ref, 1, "b", last=True)])
    assert [job.value(t) for t in range(3)] == ["a", "b", "c"] and job.done() and logic.unfinished == 0
    assert job.order == [2, 0, 1] and job.payloads == [None, None, None]  # payloads freed with their outcome


def test_nothing_is_sent_while_not_connected_and_everything_goes_once_connected():
    logic, clock = ClientLogic(), ManualClock()
    job = job_of(2)
    logic.add(job)
    assert logic.flush() == [] and logic.queued
    [msg] = logic.connected("s1", clock())
    assert msg.tasks == [b"t0", b"t1"] and job.attempts == [1, 1] and logic.failovers == []


def test_coalescing_jobs_with_the_same_settings_share_one_submit_and_the_others_go_alone():
    logic, _ = connected_logic()
    a, b, c = job_of(1, coalesce=True), job_of(2, coalesce=True), job_of(1, coalesce=True, priority=1)
    alone = job_of(1)
    msgs = add_and_flush(logic, a, b, c, alone)
    assert sorted(len(m.tasks) for m in msgs) == [1, 1, 3]
    shared = next(m for m in msgs if len(m.tasks) == 3)
    logic.on_messages([JobAccepted(shared.ref, 7), ok(shared.ref, 2, "b1"), ok(shared.ref, 0, "a0")])
    assert events(logic) == [(b, 1), (a, 0)] and a.value(0) == "a0" and b.value(1) == "b1"
    assert a.job_id == b.job_id == 7 and c.job_id is None


def test_tasks_over_one_frame_together_are_split_into_jobs_that_each_fit():
    logic, _ = connected_logic(max_frame=10_000)
    jobs = [Job(job_of(1).settings, [b"x" * 3000], coalesce=True) for _ in range(5)]
    msgs = add_and_flush(logic, *jobs)
    assert [len(m.tasks) for m in msgs] == [2, 2, 1] and all(j.attempts == [1] for j in jobs)


def test_task_prefer_goes_with_its_tasks_sliced_for_a_retry_and_joined_when_coalesced():
    """A job's per-task preferences travel in its SubmitJob; a retry of some tasks carries theirs only;
    coalesced jobs' preferences line up with their tasks in the shared placement."""
    logic, _ = connected_logic()
    job = job_of(3, prefer=[["nm-a"], None, ["nm-b", "nm-c"]])
    assert job.settings.task_prefer == [("nm-a",), (), ("nm-b", "nm-c")]
    [first] = add_and_flush(logic, job)
    assert first.task_prefer == [("nm-a",), (), ("nm-b", "nm-c")]
    [again] = logic.on_messages([failed(first.ref, 2), ok(first.ref, 0), ok(first.ref, 1, last=True)])
    assert again.tasks == [b"t2"] and again.task_prefer == [("nm-b", "nm-c")]
    plain, preferring = job_of(1, coalesce=True), job_of(2, coalesce=True, prefer=[None, ["nm-d"]])
    [shared] = add_and_flush(logic, plain, preferring)
    assert shared.task_prefer == [(), (), ("nm-d",)]
    [alone] = add_and_flush(logic, job_of(2, prefer=[None, None]))
    assert alone.task_prefer is None  # no task prefers anything: the field stays empty on the wire


def test_traffic_counts_the_payloads_sent_and_the_outcomes_received():
    """Two tasks of 2 bytes, a retry of one of them, outcomes with payloads and error text: the bytes
    of every payload placed and of every outcome received, the discarded ones included."""
    logic, _ = connected_logic()
    job = job_of(2, retries=1)
    [first] = add_and_flush(logic, job)
    assert logic.traffic["bytes_sent"] == 4
    [again] = logic.on_messages([failed(first.ref, 0), ok(first.ref, 1, "b", last=True)])
    assert logic.traffic["bytes_sent"] == 6
    received = len("it broke") + len(pickle.dumps("b"))
    assert logic.traffic["bytes_received"] == received
    logic.on_messages([ok(again.ref, 0, "a", last=True)])
    assert logic.traffic["bytes_received"] == received + len(pickle.dumps("a"))


def test_sampling_goes_with_the_job_and_only_jobs_of_the_same_sampling_share_a_placement():
    """A per-task job's placements carry sampling="per_task"; coalesced jobs of different samplings
    go apart, each with its own."""
    logic, _ = connected_logic()
    [alone] = add_and_flush(logic, job_of(2, sampling="per_task"))
    assert alone.sampling == "per_task"
    msgs = add_and_flush(logic, job_of(1, coalesce=True), job_of(1, coalesce=True, sampling="per_task"))
    assert sorted(m.sampling for m in msgs) == ["batch", "per_task"] and all(len(m.tasks) == 1 for m in msgs)


@pytest.mark.parametrize(
    "prefer, error, match",
    [
        ("nm-a", TypeError, "prefer must be one entry per task"),
        (["nm-a", None], TypeError, r"prefer\[0\] must be a sequence of node monitor ids, not a str"),
        ([[1], None], TypeError, r"prefer\[0\]: node monitor ids are str, got int"),
        ([None], ValueError, "prefer has 1 entries for 2 tasks"),
    ],
)
def test_a_malformed_prefer_is_refused_before_anything_is_sent(prefer, error, match):
    """A bare str, a non-str id or the wrong number of entries: a clear error naming `prefer`."""
    with pytest.raises(error, match=match):
        build_submit([b"a", b"b"], "", 0, None, None, prefer=prefer)


# -- retries --------------------------------------------------------------------------------------


def test_a_system_failure_is_retried_and_the_retries_of_one_batch_go_as_one_submit():
    logic, _ = connected_logic()
    job = job_of(3, retries=1)
    [first] = add_and_flush(logic, job)
    [again] = logic.on_messages([failed(first.ref, 0), failed(first.ref, 2), ok(first.ref, 1, "b", last=True)])
    assert again.tasks == [b"t0", b"t2"] and job.attempts == [2, 1, 2] and events(logic) == [(job, 1)]
    assert logic.on_messages([failed(again.ref, 0), failed(again.ref, 1, last=True)]) == []  # out of attempts
    assert events(logic) == [(job, 0), (job, 2)]
    with pytest.raises(TaskFailed, match="it broke"):
        job.value(0)


def test_a_tasks_own_exception_is_retried_only_with_retry_exceptions():
    for retry_exceptions, expected in ((False, 1), (True, 2)):
        logic, _ = connected_logic()
        job = job_of(1, retry_exceptions=retry_exceptions)
        [msg] = add_and_flush(logic, job)
        out = logic.on_messages([raised(msg.ref, 0, ValueError("bad"), last=True)])
        assert len(out) == expected - 1 and job.attempts == [expected]


def test_a_cancelled_task_is_never_retried():
    logic, _ = connected_logic()
    job = job_of(2)
    [msg] = add_and_flush(logic, job)
    [cancel] = logic.cancel(job, [1])
    assert cancel == CancelJob(msg.ref, False, [1]) and events(logic) == []  # the scheduler holds it: it confirms
    assert logic.on_messages([failed(msg.ref, 1)]) == []
    assert events(logic) == [(job, 1)] and job.attempts == [1, 1]


def test_timeouts_and_unplaceable_tasks_are_not_retried_and_a_rejected_job_fails_its_tasks():
    logic, _ = connected_logic()
    job, other = job_of(1), job_of(2)
    [msg], [rejected] = add_and_flush(logic, job), add_and_flush(logic, other)
    assert logic.on_messages([failed(msg.ref, 0, UNPLACEABLE, last=True)]) == []
    logic.on_messages([JobRejected(rejected.ref, "too many jobs")])
    assert other.done() and other.outcomes[0].failure == UNPLACEABLE
    with pytest.raises(TaskFailed, match="the scheduler rejected the job: too many jobs"):
        other.value(1)


# -- failover -------------------------------------------------------------------------------------


def test_losing_the_scheduler_relaunches_every_task_without_an_outcome_on_the_next_one():
    logic, clock = connected_logic()
    a, b = job_of(3), job_of(1)
    [ma] = add_and_flush(logic, a)
    add_and_flush(logic, b)
    logic.on_messages([ok(ma.ref, 1, "done")])
    clock.now += 1.0
    logic.lost("silent for more than 1 s", clock())
    assert events(logic) == [(a, 1)] and logic.connected_to is None
    clock.now += 0.25
    relaunch = logic.connected("s2", clock())
    assert [m.tasks for m in relaunch] == [[b"t0", b"t2"], [b"t0"]]  # one placement per job
    assert a.attempts == [2, 1, 2] and b.attempts == [2]
    (record,) = logic.failovers
    assert (record.scheduler, record.to, record.relaunched) == ("s1", "s2", 3)
    assert (record.lost_at, record.connected_at) == (101.0, 101.25)
    logic.on_messages([ok(relaunch[0].ref, 1, "a2")])  # the new placements' refs and indexes
    assert a.value(2) == "a2" and a.outcomes[0] is None


def test_an_old_placements_outcome_after_a_failover_is_a_protocol_error_not_a_second_outcome():
    logic, clock = connected_logic()
    [msg] = add_and_flush(logic, job_of(1))
    logic.lost("gone", clock())
    logic.connected("s2", clock())
    with pytest.raises(ProtocolError, match="does not wait for"):
        logic.on_messages([ok(msg.ref, 0)])


def test_a_task_out_of_attempts_fails_at_the_loss_naming_the_scheduler_and_a_cancelled_one_ends_cancelled():
    logic, clock = connected_logic()
    spent, cancelled = job_of(1, retries=0), job_of(1)
    add_and_flush(logic, spent, cancelled)
    cancelled.cancel_tasks((0,))  # cancelled; its confirmation never came
    logic.lost("connection reset", clock())
    assert events(logic) == [(spent, 0), (cancelled, 0)]
    with pytest.raises(TaskFailed, match=r"scheduler s1 was lost \(connection reset\) \(after 1 attempt\)"):
        spent.value(0)
    assert cancelled.outcomes[0].failure == CANCELLED and logic.connected("s2", clock()) == []


def test_no_scheduler_reachable_fails_every_task_without_an_outcome():
    logic, clock = connected_logic()
    job = job_of(2)
    add_and_flush(logic, job)
    logic.lost("gone", clock())
    logic.unreachable("no scheduler reachable: s1: refused")
    assert [job.outcomes[t].failure for t in range(2)] == [SYSTEM, SYSTEM] and logic.unfinished == 0
    (record,) = logic.failovers
    assert record.connected_at is None


# -- cancel and close -----------------------------------------------------------------------------


def test_cancel_ends_what_no_scheduler_holds_at_once_and_asks_for_the_rest():
    logic, clock = ClientLogic(), ManualClock()
    queued = job_of(2)
    logic.add(queued)
    assert logic.cancel(queued) == [] and queued.done() and queued.cancelled
    assert queued.outcomes[0].failure == CANCELLED and logic.connected("s1", clock()) == []
    placed = job_of(3)
    [msg] = add_and_flush(logic, placed)
    assert logic.cancel(placed, None, force=True) == [CancelJob(msg.ref, True, None)]
    logic.on_messages(
        [OutcomeToClient(msg.ref, t, Outcome(False, b"", "cancelled", failure=CANCELLED)) for t in range(3)]
    )
    with pytest.raises(TaskCancelled):
        placed.value(0)


def test_cancel_of_one_job_in_a_shared_placement_names_only_its_tasks():
    logic, _ = connected_logic()
    a, b = job_of(2, coalesce=True), job_of(1, coalesce=True)
    [msg] = add_and_flush(logic, a, b)
    assert logic.cancel(b) == [CancelJob(msg.ref, False, [2])]
    assert logic.cancel(a, [1]) == [CancelJob(msg.ref, False, [1])]


def test_closing_ends_every_task_without_an_outcome_cancelled_and_tells_the_scheduler():
    logic, _ = connected_logic()
    placed, waiting = job_of(2), job_of(1)
    [msg] = add_and_flush(logic, placed)
    logic.on_messages([ok(msg.ref, 0)])
    events(logic)
    logic.add(waiting)  # not flushed yet
    assert logic.close() == [CancelJob(msg.ref)]
    assert events(logic) == [(placed, 1), (waiting, 0)] and logic.unfinished == 0
    assert placed.outcomes[1].failure == CANCELLED and logic.flush() == []
    late = job_of(1)
    logic.add(late)
    with pytest.raises(TaskFailed, match="the client is closed"):
        late.value(0)


def test_an_outcome_that_beats_the_cancel_confirmation_counts_and_the_relaunched_placement_is_the_one_cancelled():
    logic, clock = connected_logic()
    job = job_of(1)
    [msg] = add_and_flush(logic, job)
    logic.lost("gone", clock())
    [relaunch] = logic.connected("s2", clock())
    assert logic.cancel(job) == [CancelJob(relaunch.ref, False, None)] and relaunch.ref != msg.ref
    logic.on_messages([ok(relaunch.ref, 0, "finished first", last=True)])
    assert job.value(0) == "finished first" and job.attempts == [2]


# -- status and protocol errors -------------------------------------------------------------------


def test_status_replies_match_requests_in_order_and_an_unasked_one_is_a_protocol_error():
    logic, _ = connected_logic()
    logic.status_request()
    reply = StatusReply("s1", [], [], {})
    logic.on_messages([Heartbeat(), reply])
    assert logic.query_replies == [reply]
    with pytest.raises(ProtocolError, match="StatusReply without a request"):
        logic.on_messages([reply])


@pytest.mark.parametrize(
    "msg, match",
    [
        (OutcomeToClient(99, 0, Outcome(True, b"")), "does not wait for"),
        (OutcomeToClient(1, 5, Outcome(True, b"")), "task 5 of a job of 1 tasks"),
        (NoTask(1), "NoTask is not allowed from a scheduler"),
    ],
)
def test_what_a_scheduler_may_not_send_is_a_protocol_error(msg, match):
    logic, _ = connected_logic()
    add_and_flush(logic, job_of(1))
    with pytest.raises(ProtocolError, match=match):
        logic.on_messages([msg])


# -- dependencies ---------------------------------------------------------------------------------


def _dependent(logic: ClientLogic, fn, *args, coalesce: bool = False) -> Job:
    """A one-task job calling `fn(*args)`, where each (Job, task) in args is an input."""
    inputs = find_inputs(args, {}, lambda obj: type(obj) is tuple and len(obj) == 2 and isinstance(obj[0], Job))
    job = job_of(1, coalesce=coalesce)
    logic.add(job, {0: (pack_template(fn, inputs), inputs)})
    return job


def _identity(x):
    return x


def _run(msg: SubmitJob, i: int):
    """Run task `i` of `msg` here, as a worker would (a dependent's payload is a call_with_inputs)."""
    fn, args, kwargs = cloudpickle.loads(msg.tasks[i])
    assert fn is call_with_inputs
    return fn(*args, **kwargs)


def test_the_dependents_made_ready_by_one_batch_go_as_one_submit_with_their_inputs_values():
    logic, _ = connected_logic()
    up = job_of(2)
    [msg] = add_and_flush(logic, up)
    deps = [_dependent(logic, lambda x, i=i: x + i, (up, 0), coalesce=True) for i in range(3)]
    total = _dependent(logic, lambda a, b: a * b, (up, 0), (up, 1), coalesce=True)
    assert logic.flush() == [] and all(d.attempts == [0] for d in deps)  # held
    [ready] = logic.on_messages([ok(msg.ref, 0, 10), ok(msg.ref, 1, 3, last=True)])
    assert len(ready.tasks) == 4 and [_run(ready, i) for i in range(4)] == [10, 11, 12, 30]
    assert total.attempts == [1]


def test_an_input_known_when_the_dependent_is_added_counts_at_once():
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    logic.on_messages([ok(msg.ref, 0, 5, last=True)])
    _dependent(logic, lambda x: x * 2, (up, 0))
    [ready] = logic.flush()
    assert _run(ready, 0) == 10


def test_a_failed_input_fails_its_dependents_and_theirs_without_running_naming_the_input_and_its_cause():
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    child = _dependent(logic, lambda x: x, (up, 0))
    grandchild = _dependent(logic, lambda x, y: x, 1, (child, 0))
    assert logic.on_messages([raised(msg.ref, 0, ValueError("bad row 7"), last=True)]) == []
    with pytest.raises(DependencyFailed, match=r"input args\[0\] failed: ValueError: bad row 7") as caught:
        child.value(0)
    assert isinstance(caught.value.__cause__, ValueError)
    with pytest.raises(DependencyFailed, match=r"input args\[1\] failed: ValueError: bad row 7"):
        grandchild.value(0)
    assert child.attempts == grandchild.attempts == [0]
    assert isinstance(pickle.loads(child.outcomes[0].payload), DependencyFailed)  # the wire form says it too


def test_a_cancelled_input_cancels_its_dependents_at_once_before_the_scheduler_confirms():
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    child = _dependent(logic, lambda x: x, (up, 0))
    assert logic.cancel(up) == [CancelJob(msg.ref, False, None)]
    assert events(logic) == [(child, 0)] and child.outcomes[0].failure == CANCELLED
    logic.on_messages([ok(msg.ref, 0, "finished anyway", last=True)])  # the race: too late to matter
    assert logic.flush() == [] and child.attempts == [0]


def test_cancelling_a_waiting_dependent_leaves_its_input_alone_and_it_is_never_sent():
    logic, _ = connected_logic()
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    child = _dependent(logic, lambda x: x, (up, 0))
    assert logic.cancel(child) == [] and child.outcomes[0].failure == CANCELLED
    assert logic.on_messages([ok(msg.ref, 0, 1, last=True)]) == [] and up.value(0) == 1


def test_a_dependent_over_the_frame_limit_with_its_inputs_fails_with_the_sizes():
    logic, _ = connected_logic(max_frame=100_000)
    up = job_of(1)
    [msg] = add_and_flush(logic, up)
    child = _dependent(logic, lambda x: x, (up, 0))
    assert logic.on_messages([ok(msg.ref, 0, b"v" * 200_000, last=True)]) == []
    with pytest.raises(ValueError, match="over the frame limit of 100,000 bytes"):
        child.value(0)


def test_a_failure_at_the_root_of_a_long_chain_ends_every_link_without_deep_recursion():
    logic, _ = connected_logic()
    root = job_of(1)
    [msg] = add_and_flush(logic, root)
    chain = [root]
    for _ in range(3000):
        chain.append(_dependent(logic, _identity, (chain[-1], 0)))
    logic.on_messages([failed(msg.ref, 0, CANCELLED, last=True)])
    assert all(job.outcomes[0].failure == CANCELLED for job in chain) and logic.unfinished == 0


def test_the_held_tasks_of_a_job_wait_while_its_other_tasks_go_and_are_placed_together_when_ready():
    logic, _ = connected_logic()
    up = job_of(2)
    [msg] = add_and_flush(logic, up)
    inputs = [find_inputs(((up, t),), {}, lambda obj: type(obj) is tuple) for t in range(2)]
    mixed = job_of(3)
    logic.add(mixed, {t: (pack_template(lambda x: x, inputs[t]), inputs[t]) for t in range(2)})
    [free] = logic.flush()
    assert free.tasks == [b"t2"]
    [ready] = logic.on_messages([ok(msg.ref, 0, "a"), ok(msg.ref, 1, "b", last=True)])
    assert [_run(ready, i) for i in range(2)] == ["a", "b"] and mixed.attempts == [1, 1, 1]


def test_a_retried_or_failed_over_task_keeps_its_jobs_request():
    """Resources per task: a retry after a system failure and the relaunch on the next scheduler after a
    failover ask for what the job asked for; coalesced jobs of different requests never share a placement."""
    logic, clock = connected_logic()
    job = job_of(2, retries=2, resources={"gpu": 1, "cpus": 2})
    [first] = add_and_flush(logic, job)
    assert first.resources == {"gpu": 1, "cpus": 2000}
    [again] = logic.on_messages([failed(first.ref, 0)])
    assert again.resources == first.resources
    logic.lost("silent for more than 1 s", clock())
    relaunch = logic.connected("s2", clock())
    assert [m.resources for m in relaunch] == [first.resources]
    plain, gpu = job_of(1, coalesce=True), job_of(1, coalesce=True, resources="gpu=1")
    logic.add(plain)
    logic.add(gpu)
    assert sorted(str(m.resources) for m in logic.flush()) == ["None", "{'gpu': 1}"]


def mixed_job(requests: list, *, retries: int = 3, constraints=None) -> Job:
    """A job of one task per entry of `requests`, each asking for its own (as Client.submit_job makes it)."""
    payloads = [b"t%d" % i for i in range(len(requests))]
    request, per_task = split_requests(requests, len(payloads))
    job = Job(build_submit(payloads, "", 0, None, constraints, resources=request), payloads, retries=retries)
    job.task_resources = per_task
    return job


def test_a_job_of_mixed_requests_goes_as_one_placement_per_request_and_keeps_its_task_order():
    """Tasks asking for different resources: one SubmitJob per request (tasks in job order within it,
    each with its own constraint), and each outcome lands on its own task of the one job."""
    from sparrow_runtime import Constraint

    logic, _ = connected_logic()
    constraints = [Constraint(labels=(str(i),)) for i in range(5)]
    job = mixed_job([{"gpu": 1}, None, "gpu=1", {"cpus": 2}, {}], constraints=constraints)
    msgs = add_and_flush(logic, job)
    assert [(m.tasks, m.resources) for m in msgs] == [
        ([b"t0", b"t2"], {"gpu": 1}),
        ([b"t1", b"t4"], None),
        ([b"t3"], {"cpus": 2000}),
    ]
    assert [m.task_constraints for m in msgs] == [
        [constraints[0], constraints[2]],
        [constraints[1], constraints[4]],
        [constraints[3]],
    ]
    gpu, plain, cpus = msgs
    logic.on_messages([ok(cpus.ref, 0, "d", last=True), ok(gpu.ref, 1, "c"), ok(plain.ref, 1, "e")])
    assert events(logic) == [(job, 3), (job, 2), (job, 4)]
    logic.on_messages([ok(gpu.ref, 0, "a", last=True), ok(plain.ref, 0, "b", last=True)])
    assert job.done() and [job.value(t) for t in range(5)] == ["a", "b", "c", "d", "e"]


def test_a_retried_failed_over_or_cancelled_task_of_a_mixed_job_keeps_its_own_request():
    logic, clock = connected_logic()
    job = mixed_job([{"gpu": 1}, None, {"cpus": 2}])
    _, plain, cpus = add_and_flush(logic, job)
    [again] = logic.on_messages([failed(cpus.ref, 0, last=True)])
    assert (again.tasks, again.resources) == ([b"t2"], {"cpus": 2000})
    logic.on_messages([ok(plain.ref, 0, "b", last=True)])
    logic.lost("silent for more than 1 s", clock())
    relaunch = logic.connected("s2", clock())
    assert [(m.tasks, m.resources) for m in relaunch] == [([b"t0"], {"gpu": 1}), ([b"t2"], {"cpus": 2000})]
    assert job.attempts == [2, 1, 3]
    [cancel] = logic.cancel(job, [2])
    assert cancel.ref == relaunch[1].ref


def test_per_task_requests_are_checked_at_submit_naming_the_task():
    """One request per task or one for all: the wrong number of entries, a bad amount (naming its task)
    or a request that is not one is a clear error; equal requests are one request for the job."""
    with pytest.raises(ValueError, match="resources has 2 entries for 3 tasks"):
        split_requests([None, {"gpu": 1}], 3)
    with pytest.raises(ResourceError, match=r"resources\[1\] \(task 1\).*-1"):
        split_requests([{"gpu": 1}, {"gpu": -1}], 2)
    with pytest.raises(ResourceError, match=r"resources\[0\] \(task 0\).*nan"):
        split_requests(["cpus=nan", None], 2)
    with pytest.raises(ResourceError, match=r"resources\[1\] \(task 1\)"):
        split_requests([None, 3], 2)
    with pytest.raises(TypeError, match="resources must be"):
        split_requests(7, 2)
    assert split_requests("gpu=1", 2) == ("gpu=1", None)
    assert split_requests([{"cpus": 0.5}, "cpus=0.5"], 2) == ({"cpus": 0.5}, None)
    assert split_requests([None, {"gpu": 0}], 2) == (None, None)
    assert split_requests([None, {"gpu": 1}], 2) == (None, [None, {"gpu": 1}])
