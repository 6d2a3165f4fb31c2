"""SchedulerLogic and work stealing (sans-I/O, a fake clock): stealing node monitors learn each other's
addresses; a GetTask naming another node monitor as its origin consumes that one's reservation and runs
the task at the thief, once; an origin that is gone held nothing; a thief lost with a stolen task running
fails it once; a job whose reservations may not move refuses a stolen GetTask."""

import pytest

from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.limits import MAX_STEAL_PEERS
from sparrow_runtime.wire.messages import (
    SYSTEM,
    CancelReservations,
    Constraint,
    EnqueueReservations,
    Error,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    StealPeers,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock
from .test_scheduler_logic import of_type, reservations


def stealing_cluster(n, *, steal=True, clock=None):
    """n node monitors nm0.. with one slot each, stealing (steal addresses "addr-i") unless steal=False."""
    logic = SchedulerLogic(seed=7, clock=clock or ManualClock(), bind_idle=False)
    for i in range(n):
        reg = RegisterNodeMonitor(f"nm{i}", 1, (), f"process-{i}", steal_address=f"addr-{i}" if steal else "")
        logic.on_node_messages(f"nm{i}", [reg])
    return logic


def peers_told(out):
    return {peer: msg.peers for peer, msg in of_type(out, StealPeers)}


def submit(logic, n_tasks, ref=1, **kw):
    return logic.on_client_messages("c", [SubmitJob(ref, [b"t%d" % i for i in range(n_tasks)], **kw)])


def test_stealing_node_monitors_learn_each_others_addresses_as_they_come_and_go():
    """The third to register tells all three the other two; a lost one and a draining one leave the lists;
    a node monitor that does not steal is neither told nor listed."""
    logic = stealing_cluster(2)
    out = logic.on_node_messages("nm2", [RegisterNodeMonitor("nm2", 1, (), "p2", steal_address="addr-2")])
    assert peers_told(out) == {"nm0": ["addr-1", "addr-2"], "nm1": ["addr-0", "addr-2"], "nm2": ["addr-0", "addr-1"]}
    out = logic.on_node_messages("quiet", [RegisterNodeMonitor("quiet", 1, (), "pq")])
    assert peers_told(out) == {}
    assert peers_told(logic.on_node_lost("nm1")) == {"nm0": ["addr-2"], "nm2": ["addr-0"]}
    assert peers_told(logic.on_node_messages("nm2", [Heartbeat(0, 0, True)])) == {"nm0": []}


def test_a_large_cluster_tells_each_a_bounded_sample_of_peers():
    """MAX_STEAL_PEERS + 5 stealing node monitors: the last registration tells each at most MAX_STEAL_PEERS
    distinct others, never itself."""
    n = MAX_STEAL_PEERS + 5
    logic = stealing_cluster(n - 1)
    out = logic.on_node_messages("last", [RegisterNodeMonitor("last", 1, (), "pl", steal_address="addr-last")])
    told = peers_told(out)
    assert len(told) == n
    for peer, peers in told.items():
        own = "addr-last" if peer == "last" else f"addr-{peer[2:]}"
        assert len(peers) == MAX_STEAL_PEERS == len(set(peers)) and own not in peers


@pytest.mark.parametrize(
    ("kw", "stealable"),
    [
        ({}, True),
        ({"sampling": "per_task"}, True),
        ({"constraint": Constraint(labels=("gpu",))}, False),
        ({"task_constraints": [Constraint(("nm0",)), None]}, False),
        ({"task_prefer": [("nm0",), ()]}, False),
        ({"timeout": 5.0}, False),
    ],
)
def test_only_reservations_of_unconstrained_jobs_are_stealable(kw, stealable):
    """A job with a constraint, a task constraint, a preference or a timeout (its tasks may only run where
    they can be stopped) keeps its reservations where they were placed."""
    logic = stealing_cluster(4)
    for i in range(4):  # timeouts need node monitors that can stop tasks
        logic.nodes[f"nm{i}"].can_stop = True
    logic.nodes["nm0"].labels = frozenset({"gpu"})
    out = submit(logic, 2, **kw)
    enqueued = [msg for _, msg in of_type(out, EnqueueReservations)]
    assert enqueued and all(msg.stealable is stealable for msg in enqueued)


def test_a_stolen_reservation_runs_its_task_at_the_thief_once_and_counts_as_answered():
    """1 task, d = 2 on nm0..nm2: nm2 (no reservation) asks on behalf of a probed one and gets the task; the
    job is all launched, so only the other probed one is cancelled; the thief's outcome is the task's one
    outcome; the victim asking later (it took the reservation back) gets NoTask."""
    logic = stealing_cluster(3)
    held = reservations(submit(logic, 1))
    victim, other = sorted(held)
    thief = ({"nm0", "nm1", "nm2"} - set(held)).pop()
    out = logic.on_node_messages(thief, [GetTask(1, origin=victim)])
    assert [(p, m.task) for p, m in of_type(out, TaskToNode)] == [(thief, 0)]
    assert of_type(out, CancelReservations) == [(other, CancelReservations(1))]
    assert logic.stats["get_task_stolen"] == 1
    done = logic.on_node_messages(thief, [OutcomeToScheduler(1, 0, Outcome(True, b"r"))])
    assert [m for _, m in of_type(done, OutcomeToClient)] == [OutcomeToClient(1, 0, Outcome(True, b"r"), True)]
    assert logic.jobs == {}
    assert of_type(logic.on_node_messages(victim, [GetTask(1)]), NoTask) == [(victim, NoTask(1))]


def test_every_reservation_asked_for_by_victims_and_thieves_alike_launches_each_task_once():
    """3 tasks, d = 2 on 6 node monitors: each reservation asked for twice, by its holder and by a thief
    naming it (a duplicate left by a steal link that broke): every task launches exactly once, and the job
    ends with one outcome per task."""
    logic = stealing_cluster(6)
    held = reservations(submit(logic, 3))
    launched = []
    for holder, n in sorted(held.items()):
        thief = f"nm{(int(holder[2:]) + 1) % 6}"
        for _ in range(n):
            for peer, msgs in ((thief, [GetTask(1, origin=holder)]), (holder, [GetTask(1)])):
                for _, msg in of_type(logic.on_node_messages(peer, msgs), TaskToNode):
                    launched.append((peer, msg.task))
    assert sorted(t for _, t in launched) == [0, 1, 2]
    outcomes = []
    for peer, task in launched:
        outcomes += of_type(logic.on_node_messages(peer, [OutcomeToScheduler(1, task, Outcome(True))]), OutcomeToClient)
    assert sorted(m.task for _, m in outcomes) == [0, 1, 2] and logic.jobs == {}


def test_an_origin_that_is_gone_held_nothing_and_its_tasks_are_reprobed():
    """The victim is lost after lending its reservation: the scheduler drops it and re-probes; the thief
    naming it gets NoTask, and the re-probed reservation runs the task, once."""
    logic = stealing_cluster(3)
    held = reservations(submit(logic, 1, probe_ratio=1.0))
    [victim] = held
    reprobe = reservations(logic.on_node_lost(victim))
    assert sum(reprobe.values()) == 1 and logic.stats["reprobes"] == 1
    thief = ({"nm0", "nm1", "nm2"} - {victim}).pop()
    assert of_type(logic.on_node_messages(thief, [GetTask(1, origin=victim)]), NoTask) == [(thief, NoTask(1))]
    [(holder, _)] = reprobe.items()
    assert [m.task for _, m in of_type(logic.on_node_messages(holder, [GetTask(1)]), TaskToNode)] == [0]


def test_a_thief_lost_while_running_a_stolen_task_fails_it_once():
    """The thief got the task for the victim's reservation and is lost: the task fails (SYSTEM) once; a late
    outcome from anyone is dropped."""
    clock = ManualClock()
    logic = stealing_cluster(3, clock=clock)
    held = reservations(submit(logic, 1, probe_ratio=1.0))
    [victim] = held
    thief = ({"nm0", "nm1", "nm2"} - {victim}).pop()
    assert of_type(logic.on_node_messages(thief, [GetTask(1, origin=victim)]), TaskToNode)
    clock.now += 3.0
    lost = of_type(logic.on_node_lost(thief), OutcomeToClient)
    assert [(m.task, m.outcome.failure, m.last) for _, m in lost] == [(0, SYSTEM, True)]
    assert logic.on_node_messages(victim, [OutcomeToScheduler(1, 0, Outcome(True))]) == []
    assert logic.stats["stale_outcomes"] == 1


def test_a_stolen_get_task_for_a_job_whose_reservations_may_not_move_is_a_protocol_error():
    """A job constrained to nm0: a GetTask naming nm0 from nm1 gets Error (the link closes) and launches
    nothing; nm0 itself still gets the task."""
    logic = stealing_cluster(2)
    submit(logic, 1, constraint=Constraint(("nm0",)))
    out = logic.on_node_messages("nm1", [GetTask(1, origin="nm0")])
    [(peer, error)] = of_type(out, Error)
    assert peer == "nm1" and "may not move" in error.reason and of_type(out, TaskToNode) == []
    assert [m.task for _, m in of_type(logic.on_node_messages("nm0", [GetTask(1)]), TaskToNode)] == [0]
