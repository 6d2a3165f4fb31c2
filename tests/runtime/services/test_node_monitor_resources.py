"""NodeMonitorLogic with resources (sans-I/O): a reservation launches only when its request fits in what
is free, by the kernel's launch rule (a small one passes a large head, at most max_skips times); units
and GPU ids are held from the GetTask to the task's end and never shared; plain reservations on a node
without a waiting request run as before; bad requests are a clear Error and the node keeps serving."""

import pytest

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.fit import DEFAULT_FIT_MAX_SKIPS, HostResources
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.wire.messages import (
    CancelReservations,
    EnqueueReservations,
    Error,
    GetTask,
    Heartbeat,
    NoTask,
    Outcome,
    TaskToNode,
)

GIB = 1024**3


def node(slots=8, resources=None, pipeline="off", gpu_ids=None, max_skips=DEFAULT_FIT_MAX_SKIPS, **settings):
    host = None if resources is None else HostResources(resources, gpu_ids, max_skips=max_skips)
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=slots, pipeline=pipeline, **settings), host=host)
    logic.on_scheduler_registered("s")
    return logic


def asked(out):
    return [msg.job_id for _, msg in out if type(msg) is GetTask]


def enqueue(logic, job, count=1, resources=None, priority=0):
    return logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", priority, count, resources=resources)])


def run(logic, job, task):
    """Answer a GetTask of `job` with task `task`: it starts."""
    out = logic.on_scheduler_messages("s", [TaskToNode(job, task, b"")])
    assert ("s", TaskToNode(job, task, b"")) in out
    return out


def finish(logic, job, task):
    return logic.on_task_done("s", job, task, Outcome(True))


def test_the_registration_carries_the_capacity():
    logic = node(resources={"cpus": 4000, "gpu": 2, "fpga": 0})
    assert logic.registration("nm").resources == {"cpus": 4000, "gpu": 2}


def test_a_request_launches_only_while_it_fits():
    """4 CPUs: two 2-CPU tasks ask at once, a third waits until one of them ends."""
    logic = node(resources={"cpus": 4000})
    assert asked(enqueue(logic, 1, 3, {"cpus": 2000})) == [1, 1]
    run(logic, 1, 0)
    run(logic, 1, 1)
    assert asked(finish(logic, 1, 0)) == [1]


def test_no_task_gives_the_units_back():
    logic = node(resources={"cpus": 2000})
    assert asked(enqueue(logic, 1, 2, {"cpus": 2000})) == [1]
    out = logic.on_scheduler_messages("s", [NoTask(1)])
    assert asked(out) == [1]  # the second reservation fits again


def test_a_small_request_passes_a_large_head_within_the_bound():
    """A 4-CPU head waits while 1-CPU tasks run; the 1-CPU reservations behind it run meanwhile, at
    most max_skips of them, then the host is owed to the head."""
    logic = node(resources={"cpus": 4000}, max_skips=2)
    assert asked(enqueue(logic, 1, 1, {"cpus": 1000})) == [1]
    run(logic, 1, 0)
    enqueue(logic, 2, 1, {"cpus": 4000})
    out = enqueue(logic, 3, 5, {"cpus": 1000})
    assert asked(out) == [3, 3]  # two skips, then the head is owed
    run(logic, 3, 0)
    run(logic, 3, 1)
    assert asked(finish(logic, 3, 0)) == []  # owed: nothing passes the head
    assert asked(finish(logic, 3, 1)) == []
    assert asked(finish(logic, 1, 0)) == [2]  # the host is empty: the head goes


def test_plain_reservations_take_a_slot_alone_beside_requests():
    """With requests waiting, a reservation that names nothing still runs: it takes one slot only."""
    logic = node(slots=2, resources={"gpu": 1})
    assert asked(enqueue(logic, 1, 2, {"gpu": 1})) == [1]
    run(logic, 1, 0)
    assert asked(enqueue(logic, 2, 3)) == [2]  # the second GPU reservation waits, a plain one takes the slot


def test_gpu_ids_are_never_shared_and_come_back():
    logic = node(resources={"gpu": 3}, gpu_ids=["0", "1", "2"])
    assert asked(enqueue(logic, 1, 2, {"gpu": 2})) == [1]
    run(logic, 1, 0)
    assert logic.fit.devices[("s", 1, 0)] == ["0", "1"]
    assert asked(enqueue(logic, 2, 1, {"gpu": 1})) == [2]
    run(logic, 2, 0)
    assert logic.fit.devices[("s", 2, 0)] == ["2"]
    assert asked(finish(logic, 1, 0)) == [1]
    run(logic, 1, 1)
    assert sorted(logic.fit.devices[("s", 1, 1)]) == ["0", "1"]


def test_cancelled_reservations_leave_the_window():
    logic = node(resources={"cpus": 1000})
    assert asked(enqueue(logic, 1, 1, {"cpus": 1000})) == [1]
    run(logic, 1, 0)
    enqueue(logic, 2, 3, {"cpus": 1000})
    assert logic.heartbeat().queued == 3
    logic.on_scheduler_messages("s", [CancelReservations(2)])
    assert logic.heartbeat().queued == 0
    assert asked(finish(logic, 1, 0)) == []
    assert not logic.fit.active


def test_a_lost_scheduler_gives_back_what_its_requests_held():
    logic = node(resources={"cpus": 2000})
    assert asked(enqueue(logic, 1, 3, {"cpus": 1000})) == [1, 1]
    logic.on_scheduler_lost("s")
    assert logic.fit.free == [2000] and logic.free == 8 and not logic.fit.active


def test_without_waiting_requests_the_node_pipelines_as_before():
    """The launch rule's window is only used while a request waits: plain jobs ask ahead as ever, the
    same messages as a node monitor without resources."""
    outs = []
    for resources in (None, {"cpus": 1000}):
        logic = node(slots=1, resources=resources, pipeline="always", pipeline_depth=1)
        out = enqueue(logic, 1, 3)
        out += run(logic, 1, 0)
        outs.append(out)
        assert logic.stats["asked_ahead"] == 1
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"gpu": 1}, "'gpu' is not offered here"),
        ({"cpus": 9000}, "over this node monitor's capacity cpus=4"),
    ],
)
def test_a_request_that_cannot_fit_here_is_an_error_and_the_node_keeps_serving(resources, message):
    logic = node(resources={"cpus": 4000})
    out = enqueue(logic, 1, 1, resources)
    (error,) = [msg for _, msg in out if type(msg) is Error]
    assert message in error.reason
    assert asked(enqueue(logic, 2, 1, {"cpus": 1000})) == [2]


def test_a_node_without_resources_refuses_a_request():
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=2))
    logic.on_scheduler_registered("s")
    out = enqueue(logic, 1, 1, {"cpus": 1000})
    assert "offers none" in next(msg for _, msg in out if type(msg) is Error).reason


def test_the_heartbeat_counts_the_window():
    logic = node(slots=1, resources={"cpus": 1000})
    enqueue(logic, 1, 4, {"cpus": 1000})
    assert logic.heartbeat() == Heartbeat(3, 1, False)


def test_priorities_keep_their_order_with_resources():
    """The window is filled in the queue's service order: with one GPU busy, a priority-0 GPU reservation
    queued after a priority-5 one takes the GPU first when it frees."""
    logic = node(resources={"gpu": 1}, policy="priority")
    assert asked(enqueue(logic, 1, 1, {"gpu": 1}, priority=5)) == [1]
    run(logic, 1, 0)
    enqueue(logic, 2, 1, {"gpu": 1}, priority=5)
    enqueue(logic, 3, 1, {"gpu": 1}, priority=0)
    assert asked(finish(logic, 1, 0)) == [3]


def test_fair_shares_keep_their_turns_with_resources():
    """Users a and b take turns for the one GPU, whatever the order their reservations came in."""
    logic = node(resources={"gpu": 1}, policy="fair")
    out = logic.on_scheduler_messages(
        "s",
        [
            EnqueueReservations(1, "a", 0, 3, resources={"gpu": 1}),
            EnqueueReservations(2, "b", 0, 3, resources={"gpu": 1}),
        ],
    )
    order = asked(out)
    for task in range(4):
        job = order[-1]
        run(logic, job, task)
        order += asked(finish(logic, job, task))
    assert order[:4] in ([1, 2, 1, 2], [2, 1, 2, 1])
