"""TaskHistory (task_history.py) and the scheduler feeding it: what a record says, its bounds by count and by
age and its size in memory, and who may see which records."""

import gc
import tracemalloc

import msgspec
import pytest

from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.services.task_history import RECORD_BYTES, TaskEntry, TaskHistory, error_summary
from sparrow_runtime.wire.limits import MAX_OUTPUT_TAIL
from sparrow_runtime.wire.messages import (
    CANCELLED,
    GetTask,
    Outcome,
    OutcomeToScheduler,
    Output,
    OutputToScheduler,
    RegisterNodeMonitor,
    SubmitJob,
    TasksReply,
    TasksRequest,
)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def record(history, job_id=1, task=0, user="alice", ok=True, failure=0, error=""):
    """Task `task` of job `job_id` ended now, on nm0 at its first launch, after 0.5 s queued and 2 s running."""
    now = history.clock()
    history.add(TaskEntry(job_id, task, user, ok, failure, error_summary(error), "nm0", 1, now - 2.5, now - 2.0, now))


def test_count_cap_keeps_only_the_newest_records():
    history = TaskHistory(max_records=3, clock=Clock())
    for task in range(5):
        record(history, task=task)
    assert len(history) == 3
    assert [r.task for r in history.query(None)] == [4, 3, 2]


def test_age_cap_drops_records_older_than_max_age_even_without_new_ones():
    clock = Clock()
    history = TaskHistory(max_age=60.0, clock=clock)
    record(history, task=0)
    clock.now += 30
    record(history, task=1)
    clock.now += 40  # task 0 is 70 s old, task 1 40 s
    assert [r.task for r in history.query(None)] == [1]
    assert len(history) == 1
    clock.now += 30
    assert history.query(None) == [] and len(history) == 0


def test_bytes_per_record_stay_under_the_documented_figure():
    """Measured with tracemalloc over 20,000 records with a short error each (the users' strings shared), as the
    scheduler makes them: its clock's floats and the error's summary are the record's own."""
    history = TaskHistory(max_records=20_000, clock=Clock())
    errors = [f"Traceback...\nValueError: bad input {i}" for i in range(20_000)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i, error in enumerate(errors):
        t = 1000.0 + i
        history.add(TaskEntry(i, 0, "alice", False, 0, error_summary(error), "nm0", 1, t - 0.5, t - 0.25, t + 0.5))
    per_record = (tracemalloc.get_traced_memory()[0] - before) / 20_000
    tracemalloc.stop()
    assert 50 < per_record <= RECORD_BYTES, per_record


def test_query_filters_by_user_state_job_and_age_newest_first():
    clock = Clock()
    history = TaskHistory(clock=clock)
    record(history, job_id=1, task=0, user="alice")
    clock.now += 100
    record(history, job_id=2, task=0, user="bob", ok=False, error="Traceback\n  ...\nKeyError: 'x'\n")
    record(history, job_id=2, task=1, user="alice", ok=False, failure=CANCELLED, error="cancelled by its client")
    clock.now += 1
    assert [(r.job_id, r.task) for r in history.query(None)] == [(2, 1), (2, 0), (1, 0)]
    assert [(r.job_id, r.task) for r in history.query("alice")] == [(2, 1), (1, 0)]
    failed = history.query(None, failed=True)
    assert [(r.state, r.error) for r in failed] == [
        ("cancelled", "cancelled by its client"),
        ("raised", "KeyError: 'x'"),
    ]
    assert [r.task for r in history.query(None, job_id=2)] == [1, 0]
    assert [r.job_id for r in history.query(None, since=10)] == [2, 2]
    assert len(history.query(None, limit=1)) == 1


def test_error_summary_is_the_last_line_clipped():
    assert error_summary("Traceback (most recent call last):\n  File x\nZeroDivisionError: division by zero\n") == (
        "ZeroDivisionError: division by zero"
    )
    assert len(error_summary("E" * 100_000)) <= 300


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="max_records"):
        TaskHistory(max_records=-1)
    with pytest.raises(ValueError, match="max_age"):
        TaskHistory(max_age=0)


def run_one_task(logic, client, user, ok, job_ref=1):
    logic.on_client_messages(client, [SubmitJob(job_ref, [b"t"], user=user, probe_ratio=1.0)])
    job_id = max(logic.jobs)
    logic.on_node_messages("nm0", [GetTask(job_id)])
    outcome = Outcome(True, b"v") if ok else Outcome(False, b"", "Traceback\nRuntimeError: boom")
    logic.on_node_messages("nm0", [OutcomeToScheduler(job_id, 0, outcome)])
    return job_id


def test_the_scheduler_records_each_outcome_with_node_attempts_and_times():
    clock = Clock()
    history = TaskHistory(clock=clock, wall=lambda: clock.now + 4000.0)  # the wall clock 4000 s ahead
    logic = SchedulerLogic(seed=1, bind_idle=False, clock=clock, history=history)
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="p0")])
    logic.on_client_messages("c", [SubmitJob(1, [b"t"], user="alice", probe_ratio=1.0)])
    clock.now += 2.0
    logic.on_node_messages("nm0", [GetTask(1)])
    clock.now += 3.0
    logic.on_node_messages("nm0", [OutcomeToScheduler(1, 0, Outcome(False, b"", "Traceback\nRuntimeError: boom"))])
    (r,) = logic.history.query(None)
    assert (r.job_id, r.task, r.user, r.state, r.node, r.attempts) == (1, 0, "alice", "raised", "nm0", 1)
    assert (r.queue_wait, r.run_time, r.error, r.output_tail, r.ended_at) == (
        2.0,
        3.0,
        "RuntimeError: boom",
        "",
        5005.0,
    )


def test_the_scheduler_records_outcomes_the_garbage_collector_never_tracks():
    """What the scheduler keeps per task is outside the collector (TaskEntry, gc=False): kept tuples made its
    collector run every 700 outcomes and scan every job in flight."""
    logic = SchedulerLogic(seed=1, bind_idle=False)
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="p0")])
    for ref in range(1, 4):
        run_one_task(logic, "c", "alice", ok=ref != 2, job_ref=ref)
    assert len(logic.history.entries) == 3
    assert not any(gc.is_tracked(entry) for entry in logic.history.entries)


class Identity:
    def __init__(self, user, admin=False):
        self.user, self.admin = user, admin


class Peer:
    """A client connection authenticated by certificate as `identity` (what the shell's Connection carries)."""

    def __init__(self, name, identity):
        self.name, self.identity = name, identity

    def __hash__(self):
        return hash(self.name)


def test_a_user_sees_only_their_own_tasks_and_an_admin_sees_all():
    logic = SchedulerLogic(seed=1, bind_idle=False)
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="p0")])
    alice, bob, admin = Peer("a", Identity("alice")), Peer("b", Identity("bob")), Peer("r", Identity("root", True))
    run_one_task(logic, alice, "", True)
    run_one_task(logic, bob, "", False)

    def ask(peer, **kw):
        (reply,) = [m for _, m in logic.on_client_messages(peer, [TasksRequest(**kw)])]
        assert isinstance(reply, TasksReply)
        return sorted(r.user for r in reply.tasks)

    assert ask(alice) == ["alice"]
    assert ask(alice, user="bob") == []  # another user's tasks: none, whatever the request names
    assert ask(bob, failed=True) == ["bob"]
    assert ask(admin) == ["alice", "bob"]
    assert ask(admin, user="bob") == ["bob"]


def test_a_reply_holds_only_the_records_that_fit_the_clients_link():
    """1000 records with 300-character errors would be over a 64 KiB frame: the reply keeps the newest that fit."""
    logic = SchedulerLogic(seed=1, bind_idle=False)
    for i in range(1000):
        logic.history.add(TaskEntry(i, 0, "alice", False, 0, "E" * 300, "nm0", 1, 0.0, 0.0, logic.clock()))
    logic.frame_limits["c"] = 64 * 1024
    ((_, reply),) = logic.on_client_messages("c", [TasksRequest()])
    assert 0 < len(reply.tasks) < 1000 and reply.tasks[0].job_id == 999
    assert len(msgspec.msgpack.encode(reply)) <= 64 * 1024
    del logic.frame_limits["c"]  # the scheduler's own limit (64 MiB): all of them
    ((_, reply),) = logic.on_client_messages("c", [TasksRequest()])
    assert len(reply.tasks) == 1000


def test_the_scheduler_keeps_the_end_of_what_a_task_printed_with_its_record():
    """An outcome's output leaves its last MAX_OUTPUT_TAIL bytes (stdout's end, then stderr's) in the record;
    a task that printed nothing has an empty tail."""
    logic = SchedulerLogic(seed=1, bind_idle=False)
    logic.on_node_messages("nm0", [RegisterNodeMonitor("nm0", 1, (), instance="p0")])
    logic.on_client_messages("c", [SubmitJob(1, [b"t", b"u"], user="alice", probe_ratio=2.0)])
    logic.on_node_messages("nm0", [GetTask(1), GetTask(1)])
    printed = Output(b"s" * 5000 + b"out end\n", b"err end\n", "nm0")
    out = logic.on_node_messages(
        "nm0",
        [
            OutputToScheduler(1, 0, printed),
            OutcomeToScheduler(1, 0, Outcome(True)),
            OutcomeToScheduler(1, 1, Outcome(True)),
        ],
    )
    assert [type(m).__name__ for _, m in out if _ == "c"] == ["OutputToClient", "OutcomeToClient", "OutcomeToClient"]
    quiet, loud = logic.history.query(None)
    assert quiet.output_tail == ""
    assert len(loud.output_tail) == MAX_OUTPUT_TAIL and loud.output_tail.endswith("sout end\nerr end\n")


def test_output_tails_are_bounded_by_bytes_all_together_the_oldest_going_first():
    history = TaskHistory(clock=Clock(), max_tail_bytes=10_000)
    for task in range(10):
        history.add_output(1, task, Output(b"x" * 3000))
        record(history, task=task)
    assert history.tail_bytes <= 10_000 and list(history.tails) == [(1, 7), (1, 8), (1, 9)]
    tails = {r.task: r.output_tail for r in history.query(None)}
    assert tails[9] == "x" * 3000 and tails[0] == ""


def test_a_tail_cut_inside_a_character_reads_as_text():
    history = TaskHistory(clock=Clock())
    history.add_output(1, 0, Output("é".encode() * 3000))  # 6000 bytes: the tail starts in a character's middle
    record(history)
    (r,) = history.query(None)
    assert r.output_tail.endswith("é" * 100) and len(r.output_tail.encode()) <= MAX_OUTPUT_TAIL + 2


def test_an_output_from_a_node_monitor_not_running_the_task_or_too_large_for_the_client_goes_nowhere():
    """Only the node monitor running a task may send its output (another's, or a stale one, is dropped: it never
    reaches the job's client); an output over the client's link is kept as a tail but not sent on."""
    logic = SchedulerLogic(seed=1, bind_idle=False)
    for nm in ("nm0", "nm1"):
        logic.on_node_messages(nm, [RegisterNodeMonitor(nm, 1, (), instance=nm)])
    logic.on_client_messages("c", [SubmitJob(1, [b"t"], user="alice", probe_ratio=1.0)])
    answers = {nm: type(logic.on_node_messages(nm, [GetTask(1)])[0][1]).__name__ for nm in ("nm0", "nm1")}
    (runner,) = [nm for nm, answer in answers.items() if answer == "TaskToNode"]
    other = "nm1" if runner == "nm0" else "nm0"
    assert logic.on_node_messages(other, [OutputToScheduler(1, 0, Output(b"forged"))]) == []
    assert logic.on_node_messages(runner, [OutputToScheduler(7, 0, Output(b"no such job"))]) == []
    logic.frame_limits["c"] = 64 * 1024
    assert logic.on_node_messages(runner, [OutputToScheduler(1, 0, Output(b"x" * 70_000))]) == []
    logic.on_node_messages(runner, [OutcomeToScheduler(1, 0, Outcome(True))])
    (r,) = logic.history.query(None)
    assert r.output_tail == "x" * MAX_OUTPUT_TAIL
