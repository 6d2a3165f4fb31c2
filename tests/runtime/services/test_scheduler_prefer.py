"""SchedulerLogic and SubmitJob.task_prefer (sans-I/O): a task is probed at its preferred node monitors
first, then at random ones, and runs where it is asked for first, so a busy preferred node monitor never
holds the graph up; ids of no live node monitor are ignored; a preference never bends a constraint."""

from collections import Counter

from sparrow_runtime.wire.messages import (
    Constraint,
    EnqueueReservations,
    GetTask,
    Heartbeat,
    JobAccepted,
    NoTask,
    TaskToNode,
)

from .test_scheduler_logic import cluster, of_type, reservations, submit


def ask(logic, peer, job_id, times=1):
    """`peer` asks `times` times for a task of `job_id`: the tasks it was given."""
    got = []
    for _ in range(times):
        got += [msg.task for _, msg in of_type(logic.on_node_messages(peer, [GetTask(job_id)]), TaskToNode)]
    return got


def test_a_preferring_task_is_probed_at_its_node_monitor_and_at_one_other():
    """d = 2: one reservation at the preferred node monitor and one elsewhere, for every job."""
    logic = cluster(8)
    for ref in range(1, 31):
        held = reservations(submit(logic, 1, ref=ref, task_prefer=[("nm3",)]))
        assert held["nm3"] == 1 and sum(held.values()) == 2


def test_a_busy_preferred_node_monitor_does_not_serialize_the_graph():
    """16 tasks all preferring nm0, which never asks (busy): the other node monitors run all 16 with
    their reservations alone, one each; nm0's reservations are cancelled once all are launched."""
    logic = cluster(4)
    out = submit(logic, 16, task_prefer=[("nm0",)] * 16)
    held = reservations(out)
    assert held["nm0"] == 16 and sum(held.values()) == 32
    launched = []
    for peer in ("nm1", "nm2", "nm3"):
        launched += ask(logic, peer, 1, held[peer])
    assert sorted(launched) == list(range(16)) and 1 not in logic.table  # all launched: the table let it go
    assert logic.stats["cancel_messages"] == 1  # nm0's 16 reservations, cancelled in one message
    assert logic.stats["launched_not_preferred"] == 16 and logic.stats["launched_preferred"] == 0


def test_each_preferred_node_monitor_asking_first_runs_the_task_that_prefers_it():
    """Task t prefers nm t: whatever the random probes, each node monitor asking first is given its own
    task, and the counters say all four ran where preferred."""
    for seed_ref in range(1, 21):
        logic = cluster(4)
        held = reservations(submit(logic, 4, ref=seed_ref, task_prefer=[(f"nm{t}",) for t in range(4)]))
        assert all(held[f"nm{t}"] >= 1 for t in range(4))
        assert [ask(logic, f"nm{t}", 1) for t in range(4)] == [[0], [1], [2], [3]]
        assert logic.stats["launched_preferred"] == 4


def test_unknown_and_draining_node_monitors_are_ignored_and_a_preference_never_bends_a_constraint():
    """A preference naming no live node monitor probes as without one; a draining one is not probed; a
    task constrained to nm1 that prefers nm2 runs on nm1 only."""
    logic = cluster(4)
    out = submit(logic, 2, task_prefer=[("nope",), ()])
    assert of_type(out, JobAccepted) and logic.jobs[1].preferred is None
    logic.on_node_messages("nm2", [Heartbeat(draining=True)])
    for ref in range(2, 12):
        held = reservations(submit(logic, 1, ref=ref, task_prefer=[("nm2",)]))
        assert "nm2" not in held and sum(held.values()) == 2
    held = reservations(submit(logic, 1, ref=20, task_constraints=[Constraint(("nm1",))], task_prefer=[("nm3",)]))
    assert held == Counter({"nm1": 2})


def test_a_reprobe_keeps_the_preference_of_the_unlaunched_tasks():
    """The preferred node monitor is lost with every reservation of the job: the re-probe goes to
    the preferring task's other preferred node monitor first."""
    logic = cluster(5)
    out = submit(logic, 1, probe_ratio=1.0, task_prefer=[("nm1", "nm4")])
    [(first, _)] = of_type(out, EnqueueReservations)
    assert first in ("nm1", "nm4")
    out = logic.on_node_lost(first)
    other = "nm4" if first == "nm1" else "nm1"
    assert reservations(out) == Counter({other: 1}) and logic.stats["reprobes"] == 1


def test_a_job_without_preferences_keeps_its_old_draws():
    """task_prefer None, or every entry empty: the same reservations as the same job without the field
    (the same seed), and no preference counter moves."""
    plain = reservations(submit(cluster(6), 5))
    assert reservations(submit(cluster(6), 5, task_prefer=[()] * 5)) == plain
    logic = cluster(6)
    held = reservations(submit(logic, 5, task_prefer=[()] * 5))
    assert sorted(t for peer, n in held.items() for t in ask(logic, peer, 1, n)) == [0, 1, 2, 3, 4]
    assert "launched_preferred" not in logic.stats and "launched_not_preferred" not in logic.stats


def test_no_task_for_a_preferred_node_monitor_once_its_tasks_ran_elsewhere():
    """nm0 asks after the others ran everything: it gets NoTask (each task ran exactly once)."""
    logic = cluster(3)
    held = reservations(submit(logic, 2, task_prefer=[("nm0",), ("nm0",)]))
    launched = ask(logic, "nm1", 1, held["nm1"]) + ask(logic, "nm2", 1, held["nm2"])
    assert sorted(launched) == [0, 1]
    out = logic.on_node_messages("nm0", [GetTask(1)])
    assert of_type(out, TaskToNode) == [] and of_type(out, NoTask) == [("nm0", NoTask(1))]
