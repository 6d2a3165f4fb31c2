"""Give-back (NodeMonitorLogic(give_back=True) and the scheduler's give_back.py), sans-I/O with a fake clock: a task
bound ahead behind a running task that overran goes back to its scheduler, which gives it to the next node monitor
that asks; exactly one outcome per task in every race (a cancel, the scheduler's loss, a node monitor's loss, a
lying or repeating node monitor)."""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

import pytest
import trio

from sparrow_runtime import Client, Constraint, LocalCluster, NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import GIVE_BACK_FACTOR, GIVE_BACK_MIN, NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    CANCELLED,
    SYSTEM,
    CancelJob,
    EnqueueReservations,
    Error,
    GetTask,
    GiveBack,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    StopTask,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock
from .test_scheduler_bind_idle import _mark_then

OK = Outcome(True, b"", "")
RUN = 0.01  # the warmed node's recent tasks: 10 ms each, so a running task overruns after 30 ms


def node(slots: int = 1, depth: int = 1, give_back: bool = True, clock: ManualClock | None = None) -> NodeMonitorLogic:
    """An ungated giving-back node monitor registered with scheduler "s", warmed with 8 tasks of RUN seconds."""
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=slots, pipeline="always", pipeline_depth=depth, give_back=give_back),
        clock=clock or ManualClock(0.0),
    )
    logic.on_scheduler_registered("s")
    for task in range(8):
        logic.on_scheduler_messages("s", [EnqueueReservations(999, "u", 0, 1)])
        logic.on_scheduler_messages("s", [TaskToNode(999, task, b"")])
        logic.clock.now += RUN
        logic.on_task_done("s", 999, task, OK)
    return logic


def of(out: list, kind: type) -> list:
    return [msg for _, msg in out if type(msg) is kind]


def running_with_one_bound(logic: NodeMonitorLogic, job: int = 1) -> None:
    """Task 0 of `job` runs, task 1 waits bound ahead (asked ahead while it ran), 1 reservation queued."""
    logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, 3)])
    out = logic.on_scheduler_messages("s", [TaskToNode(job, 0, b"")])
    assert of(out, GetTask) == [GetTask(job)]  # asked ahead
    assert logic.on_scheduler_messages("s", [TaskToNode(job, 1, b"")]) == []
    assert len(logic.bound) == 1


def test_a_task_bound_behind_a_task_that_overran_goes_back_and_nothing_more_is_asked_ahead() -> None:
    """1 slot, 10 ms tasks lately: task 1 waits bound behind task 0; nothing goes back until task 0 has run
    3x the longest recent task (30 ms), then GiveBack(1, 1), and the queued reservation is not asked ahead
    behind it; once task 0 ends the slot asks for a task as usual."""
    logic = node()
    assert logic.overrun_after() == pytest.approx(GIVE_BACK_FACTOR * RUN)
    running_with_one_bound(logic)
    started = logic.clock.now
    assert logic.give_back_at() == pytest.approx(started + GIVE_BACK_FACTOR * RUN)
    logic.clock.now += 0.029
    assert logic.on_give_back_timer() == [] and len(logic.bound) == 1
    logic.clock.now += 0.002
    assert logic.give_back_at() == logic.clock.now
    assert logic.on_give_back_timer() == [("s", GiveBack(1, 1))]
    assert not logic.bound and logic.give_back_at() is None and logic.stats["given_back"] == 1
    assert of(logic.on_scheduler_messages("s", []), GetTask) == []  # none asked ahead behind the overrunning task
    out = logic.on_task_done("s", 1, 0, OK)
    assert of(out, OutcomeToScheduler) == [OutcomeToScheduler(1, 0, OK)] and of(out, GetTask) == [GetTask(1)]


def test_with_no_recent_task_a_running_task_overruns_after_the_fixed_bound() -> None:
    """Before any task ended here, the overrun bound is GIVE_BACK_MIN alone."""
    logic = NodeMonitorLogic(
        NodeMonitorConfig(slots=1, pipeline="always", pipeline_depth=1, give_back=True), clock=ManualClock(0.0)
    )
    assert logic.overrun_after() == GIVE_BACK_MIN


def test_without_give_back_a_bound_task_waits_out_the_running_one() -> None:
    """give_back=False (the logic's default): nothing is ever given back, however long the running task runs."""
    logic = node(give_back=False)
    running_with_one_bound(logic)
    logic.clock.now += 10.0
    assert logic.give_back_at() is None and logic.on_give_back_timer() == [] and len(logic.bound) == 1


def test_a_task_handed_to_the_worker_ahead_is_never_given_back() -> None:
    """A pinned task (on_handed_ahead: the worker may start it at any moment) stays, whatever overruns: only the
    ones the node monitor still holds go back."""
    logic = node()
    running_with_one_bound(logic)
    logic.on_scheduler_messages("s", [TaskToNode(1, 2, b"", bound=True, user="u")])  # sent unasked: bound too
    assert len(logic.bound) == 2
    logic.on_handed_ahead([("s", 1, 1)])  # handed ahead while the recent tasks were short, say
    logic.clock.now += 1.0
    assert logic.on_give_back_timer() == [("s", GiveBack(1, 2))]
    assert [msg.task for _, msg in logic.bound] == [1] and logic.pinned == {("s", 1, 1)}


def test_with_give_back_only_short_recent_tasks_hand_tasks_to_the_worker_ahead() -> None:
    """may_pin with give-back: one slot of 10 ms tasks keeps its bound tasks (they can be given back), one of
    short tasks hands them ahead (the gate's regime); without give-back one slot always does."""
    assert not node().may_pin and node(give_back=False).may_pin
    short = NodeMonitorLogic(
        NodeMonitorConfig(slots=1, pipeline="always", pipeline_depth=1, give_back=True), clock=ManualClock(0.0)
    )
    short.on_scheduler_registered("s")
    short.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])
    short.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    short.clock.now += 0.001
    short.on_task_done("s", 1, 0, OK)
    assert short.may_pin


def test_two_slots_keep_the_tasks_bound_behind_the_slot_that_has_not_overrun() -> None:
    """2 slots, 1 deep: a task bound behind each; only one slot's task overruns: one bound task goes back (the
    later one), the other stays to take the slot that frees first."""
    logic = node(slots=2)
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 8)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.clock.now += 0.02
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])  # starts 20 ms after task 0
    logic.on_scheduler_messages("s", [TaskToNode(1, 2, b""), TaskToNode(1, 3, b"")])  # bound ahead
    assert logic.running == 2 and len(logic.bound) == 2
    logic.clock.now += 0.015  # task 0 has run 35 ms (overran), task 1 15 ms
    assert logic.on_give_back_timer() == [("s", GiveBack(1, 3))]
    assert [msg.task for _, msg in logic.bound] == [2]
    assert logic.give_back_at() == pytest.approx(0.02 + 0.08 + GIVE_BACK_FACTOR * RUN)  # when task 1 overruns


def test_a_lost_scheduler_takes_its_bound_tasks_and_nothing_is_given_back_to_it() -> None:
    """The job's scheduler fails over (its link is lost) while a task of it waits bound behind an overrunning
    one: the task is dropped with the scheduler, and no GiveBack is sent anywhere."""
    logic = node()
    running_with_one_bound(logic)
    logic.on_scheduler_lost("s")
    logic.clock.now += 1.0
    assert logic.on_give_back_timer() == [] and not logic.bound


@pytest.mark.parametrize("value", [1, "yes", None])
def test_give_back_must_be_a_bool(value) -> None:
    """A give_back that is not a bool is refused, naming it."""
    with pytest.raises(ValueError, match="give_back must be a bool"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, give_back=value))


# -- with the scheduler's logic --------------------------------------------------------------------------------


class Cluster:
    """A SchedulerLogic and giving-back node monitors "nm0", "nm1" (1 slot each, warmed), every message carried at
    once except what is held back on purpose; `ran` counts each (job, task) started by an executor."""

    def __init__(self, monitors: tuple[str, ...] = ("nm0", "nm1"), depth: int = 1) -> None:
        self.clock = ManualClock(100.0)
        self.scheduler = SchedulerLogic(seed=5, placement_timeout=0)
        self.monitors = {name: node(depth=depth, clock=self.clock) for name in monitors}
        for name in monitors:
            self.scheduler.on_node_messages(name, [RegisterNodeMonitor(name, 1)])
        self.running: dict[str, list[tuple[int, int]]] = {name: [] for name in monitors}
        self.ran: list[tuple[str, int, int]] = []
        self.to_client: list = []

    def deliver(self, out: list, source: str = "scheduler") -> None:
        queue = [(source, peer, msg) for peer, msg in out]
        while queue:
            source, peer, msg = queue.pop(0)
            if source == "scheduler" and peer == "c":
                self.to_client.append(msg)
            elif source == "scheduler":
                if peer in self.monitors:
                    queue += [(peer, "s", m) for _, m in self.monitors[peer].on_scheduler_messages("s", [msg])]
            elif type(msg) is TaskToNode:  # for the executor of node monitor `source`
                self.running[source].append((msg.job_id, msg.task))
                self.ran.append((source, msg.job_id, msg.task))
            elif type(msg) is StopTask or type(msg).__name__ in ("Stop", "Withdraw"):
                continue
            else:
                queue += [("scheduler", p, m) for p, m in self.scheduler.on_node_messages(source, [msg])]

    def join(self, name: str) -> None:
        """Another giving-back node monitor registers."""
        self.monitors[name] = node(clock=self.clock)
        self.running[name] = []
        self.scheduler.on_node_messages(name, [RegisterNodeMonitor(name, 1)])

    def finish(self, name: str) -> None:
        """The executor of `name` finishes its running task."""
        job, task = self.running[name].pop(0)
        self.deliver(self.monitors[name].on_task_done("s", job, task, OK), name)

    def outcomes(self) -> dict[int, list[int]]:
        """task -> the failure codes of its outcomes to the client, in order."""
        got: dict[int, list[int]] = {}
        for msg in self.to_client:
            if type(msg) is OutcomeToClient:
                got.setdefault(msg.task, []).append(msg.outcome.failure)
        return got


def test_a_given_back_task_runs_exactly_once_on_the_node_monitor_that_asks_next() -> None:
    """nm0 runs task 0 with task 1 bound ahead behind it (every task launched: the job left the table); nm1 joins;
    task 0 overruns: task 1 goes back, the job is back in the table and probed again, and whichever node monitor
    asks for it runs it; every task ran once and ends once."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    nm0 = cluster.monitors["nm0"]
    assert cluster.running["nm0"] == [(1, 0)] and len(nm0.bound) == 1
    assert 1 not in cluster.scheduler.table  # every task launched: the job left the table
    cluster.join("nm1")
    cluster.clock.now += 1.0
    cluster.deliver(nm0.on_give_back_timer(), "nm0")  # back in the table, probed again
    assert cluster.scheduler.stats["given_back"] == 1 and cluster.scheduler.stats["reprobes"] == 1 and not nm0.bound
    while cluster.running["nm1"] or cluster.running["nm0"]:
        for name in ("nm1", "nm0"):
            if cluster.running[name]:
                cluster.finish(name)
    assert sorted(t for _, _, t in cluster.ran) == [0, 1]  # each ran exactly once
    assert cluster.outcomes() == {0: [0], 1: [0]}
    assert 1 not in cluster.scheduler.jobs


def test_a_given_back_task_of_a_job_still_in_the_table_goes_to_its_next_get_task() -> None:
    """A 6-task job on two node monitors: nm0 gives back its bound task while the job still has reservations
    out; the next GetTask (any node monitor's) gets it, and every task runs and ends once."""
    cluster = Cluster()
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 6, probe_ratio=2.0)]))
    nm0 = cluster.monitors["nm0"]
    cluster.clock.now += 1.0
    given = nm0.on_give_back_timer()
    assert of(given, GiveBack)  # nm0 had a task bound behind its overrunning one
    cluster.deliver(given, "nm0")
    for _ in range(40):
        for name in ("nm1", "nm0"):
            if cluster.running[name]:
                cluster.finish(name)
        if not any(cluster.running.values()):
            break
    tasks = [t for _, _, t in cluster.ran]
    assert sorted(tasks) == list(range(6))  # each ran exactly once
    assert cluster.outcomes() == {t: [0] for t in range(6)}


def test_a_cancel_before_the_give_back_arrives_leaves_one_cancelled_outcome() -> None:
    """The client cancels the bound task while its GiveBack is on the way: one CANCELLED outcome, the GiveBack is
    stale (no Error, nothing relaunched), and the task never runs."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    nm0 = cluster.monitors["nm0"]
    cluster.clock.now += 1.0
    given = nm0.on_give_back_timer()
    assert of(given, GiveBack) == [GiveBack(1, 1)]
    cluster.deliver(cluster.scheduler.on_client_messages("c", [CancelJob(1, True, [1])]))  # StopTask: a no-op
    out = cluster.scheduler.on_node_messages("nm0", [GiveBack(1, 1)])
    assert not of(out, Error) and cluster.scheduler.stats["stale_give_backs"] == 1
    cluster.deliver(out)
    cluster.finish("nm0")
    assert [t for _, _, t in cluster.ran] == [0]
    assert cluster.outcomes() == {1: [CANCELLED], 0: [0]}


def test_a_cancel_after_the_give_back_leaves_one_cancelled_outcome_and_no_run() -> None:
    """The GiveBack arrives first (the task is unlaunched again), then the client cancels it: one CANCELLED
    outcome, and the reservation that would have run it gets NoTask."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    cluster.clock.now += 1.0
    cluster.deliver(cluster.monitors["nm0"].on_give_back_timer(), "nm0")  # probed again, on nm0 (the only one)
    cluster.deliver(cluster.scheduler.on_client_messages("c", [CancelJob(1, False, [1])]))
    cluster.finish("nm0")  # its reservation for the job asks: nothing is left
    assert [t for _, _, t in cluster.ran] == [0]
    assert cluster.outcomes() == {1: [CANCELLED], 0: [0]}


def test_a_node_monitor_lost_after_giving_back_fails_only_its_running_task() -> None:
    """nm0 gives back its bound task and is then lost: its running task fails once as SYSTEM; the given-back task
    is not failed with it but runs once on nm1."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    cluster.join("nm1")
    holder, other = "nm0", "nm1"
    cluster.clock.now += 1.0
    cluster.deliver(cluster.monitors[holder].on_give_back_timer(), holder)
    cluster.deliver(cluster.scheduler.on_node_lost(holder))
    del cluster.monitors[holder]
    cluster.running[holder] = []
    while cluster.running[other]:
        cluster.finish(other)
    outcomes = cluster.outcomes()
    assert sorted(outcomes) == [0, 1] and all(len(v) == 1 for v in outcomes.values())
    assert outcomes == {0: [SYSTEM], 1: [0]}  # task 0 failed once as SYSTEM (the client may retry it)
    assert [(n, t) for n, _, t in cluster.ran] == [("nm0", 0), ("nm1", 1)]


@pytest.mark.parametrize(
    "give_back, why",
    [
        (GiveBack(7, 0), "never had"),  # a job that never existed
        (GiveBack(1, 9), "has 2 tasks"),  # out of range
        (GiveBack(1, 0), "not launched to this node monitor"),  # another node monitor's task (nm0 runs it)
    ],
)
def test_a_give_back_of_a_task_not_launched_to_the_sender_is_a_protocol_error(give_back: GiveBack, why: str) -> None:
    """A lying node monitor (nm1) gives back a task of a job that never existed, one out of range, or one launched
    to nm0: Error (its link closes), and nothing changes: the task still runs and ends once at nm0."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    cluster.join("nm1")
    out = cluster.scheduler.on_node_messages("nm1", [give_back])
    (error,) = of(out, Error)
    assert why in error.reason and cluster.scheduler.stats["given_back"] == 0
    while any(cluster.running.values()):
        for name in cluster.running:
            if cluster.running[name]:
                cluster.finish(name)
    assert cluster.outcomes() == {0: [0], 1: [0]}


def test_a_repeated_give_back_is_a_protocol_error_and_the_task_still_runs_once() -> None:
    """A node monitor gives the same task back twice: the first is taken, the second (the task is no longer
    launched to it) is a protocol error; an outcome it then sends for that task anyway is stale."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"] * 2, probe_ratio=1.0)]))
    scheduler = cluster.scheduler
    cluster.clock.now += 1.0
    assert cluster.monitors["nm0"].on_give_back_timer() == [("s", GiveBack(1, 1))]
    out = scheduler.on_node_messages("nm0", [GiveBack(1, 1)])
    assert not of(out, Error)
    assert of(out, EnqueueReservations)  # every task had launched: probed again for it
    (error,) = of(scheduler.on_node_messages("nm0", [GiveBack(1, 1)]), Error)
    assert "not launched to this node monitor" in error.reason
    scheduler.on_node_messages("nm0", [OutcomeToScheduler(1, 1, Outcome(True, b"forged"))])
    assert scheduler.stats["stale_outcomes"] == 1
    assert not [m for m in cluster.to_client if type(m) is OutcomeToClient and m.task == 1]


def test_a_give_back_of_a_finished_job_is_stale_and_keeps_the_link() -> None:
    """A GiveBack that crosses its job's end (every outcome delivered) is dropped without an Error."""
    cluster = Cluster(("nm0",))
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(1, [b"x"], probe_ratio=1.0)]))
    cluster.finish("nm0")
    out = cluster.scheduler.on_node_messages("nm0", [GiveBack(1, 0)])
    assert out == [] and cluster.scheduler.stats["stale_give_backs"] == 1


def test_a_flood_of_give_backs_changes_nothing_it_should_not() -> None:
    """10,000 GiveBacks of finished jobs in one batch: all stale, no Error, and the scheduler still serves."""
    cluster = Cluster(("nm0",))
    for ref in range(3):
        cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(ref, [b"x"], probe_ratio=1.0)]))
        cluster.finish("nm0")
    out = cluster.scheduler.on_node_messages("nm0", [GiveBack(1 + j % 3, 0) for j in range(10_000)])
    assert not of(out, Error) and cluster.scheduler.stats["stale_give_backs"] == 10_000
    cluster.deliver(cluster.scheduler.on_client_messages("c", [SubmitJob(9, [b"x"], probe_ratio=1.0)]))
    cluster.finish("nm0")
    assert len(cluster.outcomes()[0]) == 4  # task 0 of each of the 4 jobs, once each


# -- real processes ----------------------------------------------------------------------------------------------


def _cluster() -> LocalCluster:
    """2 node monitors x 1 slot, process executors, pipelined ungated with give-back."""
    return LocalCluster(
        node_monitor=NodeMonitorConfig(executor="process", pipeline="always", give_back=True),
        node_monitors=2,
        slots=1,
        dashboard=False,
    )


def _nap_then_mark(path: str, nap: float) -> None:
    """Nap, then note that the nap ended in `path`."""
    time.sleep(nap)
    Path(path).write_text("ended")


async def _long_then_short(client: Client, tmp_path: Path, n: int):
    """Warm nm-0 and nm-1 with a 0.5 s task each (a task then overruns after 1.5 s there), then start a 6 s task on
    nm-0 and a job of `n` short tasks right behind it (probe ratio 4: nm-1 holds about 2n of its reservations, so
    the tasks need none of those queued behind nm-0's long task): nm-0 asks ahead for one, binds it behind its long
    task and gives it back. Returns (the long job, the short job)."""
    for name in ("nm-0", "nm-1"):
        warm = await client.submit_job([partial(time.sleep, 0.5)], constraints=Constraint((name,)))
        with trio.fail_after(60):
            await warm.outcomes()
    long = await client.submit_job(
        [partial(_nap_then_mark, str(tmp_path / "long-ended"), 6.0)], constraints=Constraint(("nm-0",))
    )
    tasks = [partial(_mark_then, str(tmp_path / f"t{t}"), t, 0.01) for t in range(n)]
    short = await client.submit_job(tasks, probe_ratio=4.0)  # so nm-1 holds a reservation for each task
    return long, short


@pytest.mark.slow
def test_a_task_given_back_on_a_real_cluster_runs_exactly_once_elsewhere_before_the_long_task_ends(
    tmp_path: Path,
) -> None:
    """Real processes, LocalCluster(pipeline="always", give_back=True), 2 node monitors x 1 slot, process
    executors: nm-0 binds a short task behind its 6 s task and gives it back once that one has run 1.5 s; every
    short task ends ok on its first attempt, ran exactly once (a marker file per task), and all of them ended while
    the long task still ran. About 10 s."""

    async def main() -> dict:
        with _cluster() as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                long, short = await _long_then_short(client, tmp_path, 20)
                with trio.fail_after(60):
                    outcomes = await short.outcomes()
                assert not (tmp_path / "long-ended").exists(), "a short task waited for the long one"
                assert [o.value for o in outcomes] == list(range(20)) and all(
                    o.ok and o.attempts == 1 for o in outcomes
                )
                with trio.fail_after(60):
                    (ended,) = await long.outcomes()
                assert ended.ok
                return (await client.status()).counters

    counters = trio.run(main)
    assert counters["given_back"] >= 1
    runs = {p.name: len(p.read_text()) for p in tmp_path.iterdir() if p.name != "long-ended"}
    assert runs == {f"t{t}": 1 for t in range(20)}


@pytest.mark.slow
def test_a_node_monitor_sigkilled_after_giving_back_loses_no_task_and_runs_none_twice(tmp_path: Path) -> None:
    """Real processes, as above: once nm-0 has given a task back, it is SIGKILLed with its long task running: the
    long task fails (its node monitor was lost), and every short task, the given-back one included, ends ok on its
    first attempt and ran exactly once."""

    async def main() -> list:
        with _cluster() as cluster:
            async with Client(cluster.schedulers, **cluster.credentials) as client:
                long, short = await _long_then_short(client, tmp_path, 20)
                with trio.fail_after(30):
                    while (await client.status()).counters.get("given_back", 0) < 1:
                        await trio.sleep(0.02)
                os.kill(cluster.node_monitor_pids[0], signal.SIGKILL)
                with trio.fail_after(60):
                    outcomes = await short.outcomes()
                    (lost,) = await long.outcomes()
                assert not lost.ok
                return outcomes

    outcomes = trio.run(main)
    assert [o.value for o in outcomes] == list(range(20)) and all(o.ok and o.attempts == 1 for o in outcomes)
    runs = {p.name: len(p.read_text()) for p in tmp_path.iterdir()}
    assert runs == {f"t{t}": 1 for t in range(20)}
