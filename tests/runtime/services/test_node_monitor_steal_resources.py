"""NodeMonitorLogic, work stealing and resources (sans-I/O, a fake clock): a victim whose reservations wait for
units lends from its launch rule's window only what fits together in the thief's free units; each stolen
reservation keeps its request at the thief, which launches it once it fits, holds its units and gives it GPU
ids of its own; one the thief does not offer goes back at once, and a lent one taken back is queued again with
its request."""

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.fit import HostResources
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    GetTask,
    NoTask,
    Outcome,
    Registered,
    Released,
    StealRelease,
    StealState,
    StealTake,
    Stolen,
    StolenReservation,
    TaskToNode,
)

from ..manual_clock import ManualClock


def node(node_id, resources, slots=4, **rule):
    host = None if resources is None else HostResources(resources, **rule)
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=slots, steal=True), host=host, seed=3, clock=ManualClock())
    logic.stealing.node_id = node_id
    logic.on_registration_reply("s", Registered("id-s"))
    return logic


def of_type(out, kind):
    return [msg for _, msg in out if type(msg) is kind]


def enqueue(logic, job, count, resources):
    return logic.on_scheduler_messages("s", [EnqueueReservations(job, "u", 0, count, "sess", True, resources)])


def gpu_victim():
    """4 slots, 2 GPUs, both held by job 1's running task; waiting in the window for GPUs: job 2 (gpu=2), then
    two of job 3 (gpu=1); a CPU task of job 4 ran past them (a slot is still free)."""
    victim = node("v", {"gpu": 2, "cpus": 4000})
    enqueue(victim, 1, 1, {"gpu": 2})
    victim.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    enqueue(victim, 2, 1, {"gpu": 2})
    enqueue(victim, 3, 2, {"gpu": 1})
    out = enqueue(victim, 4, 1, {"cpus": 1000})
    assert of_type(out, GetTask) == [GetTask(4)]
    assert victim.free == 2 and [entry.job_id for _, entry, _ in victim.fit.staged] == [2, 3, 3]
    return victim


def test_a_victim_with_a_free_slot_whose_reservations_wait_for_units_tells_them_stealable():
    victim = gpu_victim()
    victim.clock.now += 1.5
    assert victim.stealing.steal_state() == StealState(3, 1.5)


def test_a_victim_lends_only_what_fits_together_in_the_thiefs_free_units_each_with_its_request():
    """Asked for 3 by a thief with one GPU free, the victim lends one gpu=1 reservation (the first in its window
    that fits), with its request; with two GPUs free, the head (gpu=2) and nothing after it; a thief offering no
    GPUs gets nothing."""
    victim = gpu_victim()
    stolen = victim.give("t", StealTake(3, ("id-s",), {"gpu": 1, "cpus": 4000}), [])
    assert stolen == Stolen([StolenReservation("id-s", 3, "u", 0, "sess", "v", 1, {"gpu": 1})])
    assert [entry.job_id for _, entry, _ in victim.fit.staged] == [2, 3]
    victim = gpu_victim()
    stolen = victim.give("t", StealTake(3, ("id-s",), {"gpu": 2}), [])
    assert stolen == Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1, {"gpu": 2})])
    for free in ({"cpus": 8000}, None):
        victim = gpu_victim()
        assert victim.give("t", StealTake(3, ("id-s",), free), []) == Stolen([])
        assert victim.stats["lent"] == 0 and len(victim.fit.staged) == 3


def test_lending_the_head_the_launch_rule_waits_for_lets_the_next_launch_at_the_victim():
    """Strict order (fit_max_skips=0): a cpus=1 reservation waits behind a cpus=4 head on a host with 1 CPU
    free. Lending the head to a thief with 4 CPUs free lets the small one ask for its task at once."""
    victim = node("v", {"cpus": 4000}, max_skips=0)
    enqueue(victim, 1, 1, {"cpus": 3000})
    victim.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    enqueue(victim, 2, 1, {"cpus": 4000})
    assert not of_type(enqueue(victim, 3, 1, {"cpus": 1000}), GetTask)
    out: list = []
    stolen = victim.give("t", StealTake(1, ("id-s",), {"cpus": 4000}), out)
    assert stolen == Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1, {"cpus": 4000})])
    assert of_type(out, GetTask) == [GetTask(3)]


def test_a_thief_asks_with_its_free_units():
    thief = node("t", {"gpu": 2, "cpus": 4000})
    assert thief.stealing.steal_take(2) == StealTake(2, ("id-s",), {"cpus": 4000, "gpu": 2})
    plain = NodeMonitorLogic(NodeMonitorConfig(slots=1, steal=True), seed=3)
    plain.on_registration_reply("s", Registered("id-s"))
    assert plain.stealing.steal_take(1) == StealTake(1, ("id-s",), None)


def test_a_stolen_reservation_keeps_its_request_at_the_thief_gpu_ids_of_its_own():
    """Two gpu=1 reservations stolen by a thief with 2 GPUs: each asks naming its origin, each task runs with a
    GPU id no other holds, the thief's GPUs are held while they run and free once they end."""
    thief = node("t", {"gpu": 2})
    out = thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 7, "u", 0, "sess", "v", 2, {"gpu": 1})]), 2)
    assert of_type(out, GetTask) == [GetTask(7, "v"), GetTask(7, "v")]
    assert thief.fit.free == [0]
    thief.on_scheduler_messages("s", [TaskToNode(7, 0, b"")])
    thief.on_scheduler_messages("s", [TaskToNode(7, 1, b"")])
    assert sorted(ids for (ids,) in thief.fit.devices.values()) == ["0", "1"]
    thief.on_task_done("s", 7, 0, Outcome(True))
    thief.on_task_done("s", 7, 1, Outcome(True))
    assert thief.fit.free == [2] and thief.fit.devices == {} and sorted(thief.fit.gpus_free) == ["0", "1"]


def test_a_stolen_reservation_that_does_not_fit_yet_waits_for_its_units():
    """A thief with one GPU steals two gpu=1 reservations: the second asks only once the first's task ends; a
    NoTask for it gives its GPU back."""
    thief = node("t", {"gpu": 1})
    out = thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 7, "u", 0, "sess", "v", 2, {"gpu": 1})]), 2)
    assert of_type(out, GetTask) == [GetTask(7, "v")]
    thief.on_scheduler_messages("s", [TaskToNode(7, 0, b"")])
    out = thief.on_task_done("s", 7, 0, Outcome(True))
    assert of_type(out, GetTask) == [GetTask(7, "v")]
    assert thief.fit.free == [0]
    thief.on_scheduler_messages("s", [NoTask(7)])
    assert thief.fit.free == [1] and not thief.fit.active


def test_a_thief_that_does_not_offer_a_request_gives_it_back_and_the_victim_queues_it_with_it():
    """A thief with CPUs only (or none at all) is lent a gpu=1 reservation (a victim of an older rule): it gives
    it back at once, unused, asking for nothing; the victim queues it again with its request, and so it does
    with what it lent a thief whose link ended."""
    for resources in ({"cpus": 4000}, None):
        thief = node("t", resources)
        out = thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 3, "u", 0, "sess", "v", 1, {"gpu": 1})]), 1)
        assert of_type(out, GetTask) == []
        assert of_type(out, StealRelease) == [StealRelease([Released("id-s", 3, 1, False)])]
        assert thief.stats["stolen_given_back"] == 1
    victim = gpu_victim()
    victim.give("t", StealTake(3, ("id-s",), {"gpu": 1}), [])
    victim.on_release("t", StealRelease([Released("id-s", 3, 1, False)]))
    assert [entry.job_id for _, entry, _ in victim.fit.staged] == [2, 3, 3]
    assert all(entry.request == (1, 0, 1) for _, entry, _ in victim.fit.staged[1:])  # (slot, cpus, gpu)
    victim.give("t2", StealTake(3, ("id-s",), {"gpu": 2}), [])
    victim.on_thief_lost("t2")
    assert sorted(entry.job_id for _, entry, _ in victim.fit.staged) == [2, 3, 3]
