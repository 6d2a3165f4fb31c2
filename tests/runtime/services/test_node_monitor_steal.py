"""NodeMonitorLogic and work stealing (sans-I/O, a fake clock): the victim's answer and what it lends,
what stays pinned, the thief's GetTask naming the origin and its release once answered, and every way a
lent reservation comes back (the link to the thief ends, a give-back, a cancel that makes it moot)."""

import pytest

from sparrow_runtime.errors import ProtocolError
from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.wire.messages import (
    CancelReservations,
    EnqueueReservations,
    GetTask,
    NoTask,
    Outcome,
    Registered,
    Released,
    StealPeers,
    StealRelease,
    StealState,
    StealTake,
    Stolen,
    StolenReservation,
    TaskToNode,
)

from ..manual_clock import ManualClock


def node(node_id, slots=1, clock=None, schedulers=("s",)):
    logic = NodeMonitorLogic(NodeMonitorConfig(slots=slots, steal=True), seed=3, clock=clock or ManualClock())
    logic.stealing.node_id = node_id
    for s in schedulers:
        logic.on_registration_reply(s, Registered(f"id-{s}"))
    return logic


def of_type(out, kind):
    return [(peer, msg) for peer, msg in out if type(msg) is kind]


def busy_victim(queued=3, stealable=True, clock=None):
    """A one-slot node monitor running a task of job 1 with `queued` reservations of job 2 waiting."""
    victim = node("v", clock=clock)
    out = victim.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1, "sess", True)])
    assert of_type(out, GetTask) == [("s", GetTask(1))]
    victim.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    victim.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, queued, "sess", stealable)])
    return victim


def test_a_busy_victim_tells_what_may_move_and_lends_from_its_queue_head():
    """A victim 2.5 s into its running task, 3 reservations queued: the probe is told (3, 2.5); asked for 2 it
    gives one grouped reservation of count 2 naming itself as origin, and keeps one queued."""
    clock = ManualClock()
    victim = busy_victim(clock=clock)
    clock.now += 2.5
    assert victim.stealing.steal_state() == StealState(3, 2.5)
    stolen = victim.give("thief", StealTake(2, ("id-s",)), [])
    assert stolen == Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 2)])
    assert len(victim.queue) == 1 and victim.stats["lent"] == 2


def test_an_idle_node_monitor_and_pinned_reservations_give_nothing():
    """A node monitor with a free slot answers (0, 0) and lends nothing; a job that may not move, or a
    thief not registered with its scheduler, leaves the queue as it was."""
    idle = node("v")
    assert idle.stealing.steal_state() == StealState(0, 0.0)
    assert idle.give("thief", StealTake(1, ("id-s",)), []) == Stolen([])
    pinned = busy_victim(stealable=False)
    assert pinned.give("thief", StealTake(2, ("id-s",)), []) == Stolen([])
    elsewhere = busy_victim()
    assert elsewhere.give("thief", StealTake(2, ("id-other",)), []) == Stolen([])
    assert len(pinned.queue) == len(elsewhere.queue) == 3


def test_the_thief_asks_for_a_stolen_reservation_naming_its_origin_and_releases_it_once_answered():
    """The thief queues what it got, asks its scheduler GetTask(2, origin="v") at once, and releases the
    reservation to its lender (used) when the answer comes; the task runs at the thief."""
    thief = node("t")
    out = thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1)]), asked=1)
    assert of_type(out, GetTask) == [("s", GetTask(2, origin="v"))]
    out = thief.on_scheduler_messages("s", [TaskToNode(2, 0, b"")])
    assert of_type(out, TaskToNode) == [("s", TaskToNode(2, 0, b""))]
    assert of_type(out, StealRelease) == [("link-v", StealRelease([Released("id-s", 2, 1, True)]))]


def test_answers_are_matched_to_own_and_stolen_requests_in_order():
    """A two-slot thief holding its own reservation of job 2 and a stolen one asks for both; the first answer
    (its own request) releases nothing, the second releases the stolen one."""
    thief = node("t", slots=2)
    thief.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 1, "sess", True)])
    out = thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1)]), asked=1)
    assert of_type(out, GetTask) == [("s", GetTask(2, origin="v"))]
    assert of_type(thief.on_scheduler_messages("s", [NoTask(2)]), StealRelease) == []
    out = thief.on_scheduler_messages("s", [NoTask(2)])
    assert of_type(out, StealRelease) == [("link-v", StealRelease([Released("id-s", 2, 1, True)]))]


def test_a_victim_takes_back_what_is_still_lent_when_the_link_to_the_thief_ends():
    """Lent 2, one released as used and one given back (queued again at once), then 1 more lent and the link
    ends: it is queued again too; a release after that changes nothing."""
    victim = busy_victim(queued=4)
    victim.give("thief", StealTake(2, ("id-s",)), [])
    assert len(victim.queue) == 2
    victim.on_release("thief", StealRelease([Released("id-s", 2, 1, True), Released("id-s", 2, 1, False)]))
    assert len(victim.queue) == 3 and victim.stats["steal_taken_back"] == 1
    victim.give("thief", StealTake(1, ("id-s",)), [])
    assert len(victim.queue) == 2
    victim.on_thief_lost("thief")
    assert len(victim.queue) == 3 and victim.stats["steal_taken_back"] == 2
    victim.on_release("thief", StealRelease([Released("id-s", 2, 9, False)]))
    assert len(victim.queue) == 3


def test_a_victim_whose_task_ends_asks_for_reservations_it_took_back():
    """After the thief's link ends, the victim's freed slot asks for the job whose reservation came back."""
    victim = busy_victim(queued=1)
    victim.give("thief", StealTake(1, ("id-s",)), [])
    assert len(victim.queue) == 0
    victim.on_thief_lost("thief")
    out = victim.on_task_done("s", 1, 0, Outcome(True))
    assert of_type(out, GetTask) == [("s", GetTask(2))]


def test_a_cancel_at_the_victim_makes_its_lent_reservations_moot():
    """CancelReservations(2) at the victim: nothing of job 2 is queued again when the thief's link ends."""
    victim = busy_victim(queued=2)
    victim.give("thief", StealTake(2, ("id-s",)), [])
    victim.on_scheduler_messages("s", [CancelReservations(2)])
    victim.on_thief_lost("thief")
    assert len(victim.queue) == 0


def test_a_thief_gives_back_what_its_lost_scheduler_never_answered():
    """The thief's scheduler link ends with one stolen reservation asked for and one queued: both go back
    to the lender (not used), which queues them again."""
    thief = node("t", slots=1)
    thief.on_scheduler_messages("s", [EnqueueReservations(9, "u", 0, 1, "", True)])  # holds the slot
    thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1)]), asked=1)
    thief.on_scheduler_messages("s", [TaskToNode(9, 0, b"")])
    out = thief.on_task_done("s", 9, 0, Outcome(True))
    assert of_type(out, GetTask) == [("s", GetTask(2, origin="v"))]
    thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 1)]), asked=1)
    out = thief.on_scheduler_lost("s")
    assert of_type(out, StealRelease) == [("link-v", StealRelease([Released("id-s", 2, 2, False)]))]
    assert len(thief.queue) == 0 and thief.free == 1


def test_a_draining_thief_gives_its_queued_stolen_reservations_back():
    """Drain drops the queue: the stolen reservations waiting there go back to their lender."""
    thief = node("t")
    thief.on_scheduler_messages("s", [EnqueueReservations(9, "u", 0, 1, "", True)])
    thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "sess", "v", 3)]), asked=3)
    out = thief.drain()
    assert of_type(out, StealRelease) == [("link-v", StealRelease([Released("id-s", 2, 3, False)]))]


def test_stolen_reservations_of_unknown_schedulers_go_back_and_lies_are_refused():
    """A reservation of a scheduler the thief is not registered with goes straight back; more than asked for
    is a ProtocolError (the shell closes that link, and the lender takes them back)."""
    thief = node("t")
    out = thief.on_stolen("link-v", Stolen([StolenReservation("id-x", 2, "u", 0, "", "v", 1)]), asked=1)
    assert of_type(out, StealRelease) == [("link-v", StealRelease([Released("id-x", 2, 1, False)]))]
    with pytest.raises(ProtocolError, match="2 reservations stolen, 1 asked for"):
        thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "", "v", 2)]), asked=1)


def test_a_stolen_reservation_is_never_lent_again():
    """A busy thief's queue holds only stolen reservations: it tells probes 0 and lends nothing."""
    thief = node("t")
    thief.on_scheduler_messages("s", [EnqueueReservations(9, "u", 0, 1, "", True)])
    thief.on_scheduler_messages("s", [TaskToNode(9, 0, b"")])
    thief.on_stolen("link-v", Stolen([StolenReservation("id-s", 2, "u", 0, "", "v", 2)]), asked=2)
    assert thief.stealing.steal_state().stealable == 0
    assert thief.give("other", StealTake(2, ("id-s",)), []) == Stolen([])


def test_the_kernel_picks_the_victim_queued_behind_the_longest_task_and_takes_at_most_the_free_slots():
    """Peers told by the scheduler make an idle node monitor want to steal; of answers (3, 1.0) and (5, 4.0)
    the kernel picks the second and takes 2 of a 2-slot thief's free slots (half its queue would be 3)."""
    thief = node("t", slots=2)
    thief.on_scheduler_messages("s", [StealPeers(["a:1", "b:2"])])
    assert thief.stealing.steal_due and thief.stealing.steal_wanted() and thief.stealing.peers() == ["a:1", "b:2"]
    assert sorted(thief.stealing.choose_victims(2)) == [0, 1]
    assert thief.stealing.choose([StealState(3, 1.0), StealState(5, 4.0)]) == (1, 2)
    assert thief.stealing.choose([StealState(0, 9.0)]) is None
    assert thief.stealing.steal_take(2) == StealTake(2, ("id-s",))
