"""SchedulerLogic with resources (sans-I/O): a job's request becomes a constraint over the registered
capacities, its reservations carry it, a request nothing can hold fails with the largest capacity
seen after the placement wait, bad requests are refused, and such jobs are not bound unasked; their
reservations may be stolen only by a node monitor whose capacity holds the request; a retried or re-probed
task keeps its request."""

import pytest

from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import (
    UNPLACEABLE,
    EnqueueReservations,
    Error,
    GetTask,
    JobRejected,
    OutcomeToClient,
    Registered,
    RegisterNodeMonitor,
    SubmitJob,
    TaskToNode,
)

GIB = 1024**3


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cluster(capacities, **kw):
    """A scheduler with one node monitor per capacity ({kind: units}), nm0, nm1, ..."""
    logic = SchedulerLogic(seed=3, **kw)
    for i, capacity in enumerate(capacities):
        reg = RegisterNodeMonitor(f"nm{i}", 4, instance=f"p{i}", steal_address=f"h:{i}", resources=capacity)
        out = logic.on_node_messages(f"nm{i}", [reg])
        assert (f"nm{i}", Registered(logic.scheduler_id)) in out
    return logic


def submit(logic, n_tasks, **kw):
    return logic.on_client_messages("c", [SubmitJob(1, [b"t%d" % i for i in range(n_tasks)], **kw)])


def enqueued(out):
    return {peer: msg for peer, msg in out if type(msg) is EnqueueReservations}


CAPACITIES = [{"cpus": 4000, "memory": 8 * GIB}, {"cpus": 16000, "memory": 64 * GIB, "gpu": 2}, {"cpus": 8000}]


def test_probes_go_only_to_node_monitors_whose_capacity_holds_the_request():
    """A GPU job probes only the GPU host, however many probes it wants; its reservations carry the request."""
    logic = cluster(CAPACITIES)
    sent = enqueued(submit(logic, 4, resources={"gpu": 1, "cpus": 2000}))
    assert set(sent) == {"nm1"}
    assert sent["nm1"].resources == {"gpu": 1, "cpus": 2000}
    assert sent["nm1"].stealable  # by a thief that can hold it (below)


def test_a_stolen_reservation_runs_only_at_a_thief_whose_capacity_holds_its_request():
    """A job asking for cpus=6 probes nm1 and nm2 (d = 1 over 2 tasks): nm0 (4 CPUs) asking on behalf of one of
    them is a protocol error naming the request (a thief that checks its capacity never does that); nm3 (16
    CPUs, no reservation) gets the task, which keeps its request (the node monitor holds it from the steal)."""
    logic = cluster([*CAPACITIES, {"cpus": 16000}])
    sent = enqueued(submit(logic, 2, resources={"cpus": 6000}, probe_ratio=1.0))
    victim = sorted(sent)[0]
    assert set(sent) <= {"nm1", "nm2", "nm3"}
    thief = next(n for n in ("nm1", "nm2", "nm3") if n not in sent)
    out = logic.on_node_messages("nm0", [GetTask(1, origin=victim)])
    errors = [msg.reason for peer, msg in out if type(msg) is Error]
    assert errors and "cpus=6" in errors[0] and "over this node monitor's capacity" in errors[0]
    out = logic.on_node_messages(thief, [GetTask(1, origin=victim)])
    assert [(peer, msg.task) for peer, msg in out if type(msg) is TaskToNode] == [(thief, 0)]
    assert logic.stats["get_task_stolen"] == 2


def test_a_cpu_request_probes_every_host_with_enough_cpus():
    logic = cluster(CAPACITIES)
    sent = enqueued(submit(logic, 20, resources={"cpus": 8000}))
    assert set(sent) == {"nm1", "nm2"}


def test_a_job_without_resources_probes_everywhere_and_carries_none():
    logic = cluster(CAPACITIES)
    sent = enqueued(submit(logic, 30))
    assert set(sent) == {"nm0", "nm1", "nm2"}
    assert all(msg.resources is None for msg in sent.values())


def test_an_impossible_request_fails_after_the_placement_wait_naming_the_largest_capacity():
    """Like an unsatisfiable constraint: it waits placement_timeout for a node monitor that could take
    it, then every task fails UNPLACEABLE with the request and the largest capacity seen."""
    clock = Clock()
    logic = cluster(CAPACITIES, clock=clock, placement_timeout=2.0)
    out = submit(logic, 2, resources={"gpu": 4})
    assert not enqueued(out) and not [m for _, m in out if type(m) is OutcomeToClient]
    clock.now = 2.5
    failed = [m for _, m in logic.on_timer() if type(m) is OutcomeToClient]
    assert len(failed) == 2
    reason = failed[0].outcome.error
    assert failed[0].outcome.failure == UNPLACEABLE
    assert "no live node monitor has the resources gpu=4" in reason and "the largest capacity seen: gpu=2" in reason


def test_a_node_monitor_that_registers_in_time_takes_the_waiting_job():
    clock = Clock()
    logic = cluster(CAPACITIES, clock=clock, placement_timeout=5.0)
    submit(logic, 1, resources={"gpu": 4})
    reg = RegisterNodeMonitor("big", 8, instance="pb", resources={"gpu": 8})
    out = logic.on_node_messages("big", [reg])
    assert enqueued(out)["big"].resources == {"gpu": 4}


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"gpu": -1}, "gpu=-1 units"),
        ({"gpu": 2**60}, "must be an integer in"),
        ({"Bad Name": 1}, "bad resource name"),
        ({f"r{i}": 1 for i in range(1000)}, "1000 resources named"),
        ({"slots": 2}, "every task takes one slot"),
    ],
)
def test_hostile_requests_are_rejected_and_the_scheduler_keeps_serving(resources, message):
    logic = cluster(CAPACITIES)
    out = submit(logic, 1, resources=resources)
    (rejected,) = [m for _, m in out if type(m) is JobRejected]
    assert message in rejected.reason
    assert enqueued(submit(logic, 2, resources={"cpus": 1000}))  # the next job goes on


def test_a_reprobed_job_keeps_its_request():
    """The node monitor holding a job's reservations is lost: the job is probed again with its request."""
    logic = cluster([*CAPACITIES, {"gpu": 1}])
    sent = enqueued(submit(logic, 1, resources={"gpu": 1}, probe_ratio=1.0))
    (holder,) = sent
    out = logic.on_node_lost(holder)
    again = enqueued(out)
    assert again and holder not in again
    assert all(msg.resources == {"gpu": 1} for msg in again.values())


def test_bind_idle_never_sends_a_task_with_resources_unasked():
    logic = cluster(CAPACITIES, bind_idle=True)
    out = submit(logic, 2, resources={"cpus": 1000})
    assert enqueued(out) and not [m for _, m in out if type(m).__name__ == "TaskToNode"]
