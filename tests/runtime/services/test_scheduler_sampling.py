"""SchedulerLogic and SubmitJob.sampling (sans-I/O): a per-task sampled job gives each task ceil(d)
probes of its own and runs each task only at one of them, first come; batch stays the default; a
bad sampling is rejected."""

from collections import Counter

import numpy as np

import sparrow_core
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    GetTask,
    JobRejected,
    NoTask,
    TaskToNode,
)

from .test_scheduler_logic import cluster, of_type, reservations, submit


def test_per_task_sampling_probes_ceil_d_per_task_made_for_it():
    """5 tasks, d = 2 and d = 1.5, 20 node monitors: 2 reservations per task in the task table, each
    task's two on distinct node monitors."""
    for ratio in (2.0, 1.5):
        logic = cluster(20)
        held = reservations(submit(logic, 5, sampling="per_task", probe_ratio=ratio))
        assert sum(held.values()) == 10 and logic.stats["probes"] == 10
        assert logic.table.outstanding(1) == 10


def test_a_per_task_job_runs_each_task_only_where_it_was_probed():
    """Asked by every node monitor for every reservation it holds, each task launches once, at a node
    monitor that holds one of its probes (the kernel's draws for the scheduler's seed); the other
    three requests get NoTask."""
    logic = cluster(6)
    held = reservations(submit(logic, 3, sampling="per_task"))
    workers, made_for = sparrow_core.sample_job(sparrow_core.Rng(7), 6, 3, 2.0, np.arange(6), per_task=True)
    probed_for = {
        t: {f"nm{w}" for w, u in zip(workers.tolist(), made_for.tolist(), strict=True) if u == t} for t in range(3)
    }
    launched: dict[int, str] = {}
    empty = 0
    for peer, n in sorted(held.items()):
        for _ in range(n):
            reply = logic.on_node_messages(peer, [GetTask(1)])
            for _, msg in of_type(reply, TaskToNode):
                assert msg.task not in launched and peer in probed_for[msg.task]
                launched[msg.task] = peer
            empty += len(of_type(reply, NoTask))
    assert sorted(launched) == [0, 1, 2] and empty == 3


def test_batch_is_the_default_and_draws_as_before():
    """sampling="batch" and no sampling at all: the same reservations from the same seed."""
    assert reservations(submit(cluster(6), 4, sampling="batch")) == reservations(submit(cluster(6), 4))


def test_an_unknown_sampling_is_rejected_and_changes_nothing():
    """sampling="power-of-two": JobRejected naming the field and the choices; no job, no probe."""
    logic = cluster(3)
    out = submit(logic, 2, sampling="power-of-two")
    [(_, rejected)] = of_type(out, JobRejected)
    assert rejected.reason == "sampling: 'power-of-two' is not one of batch, per_task"
    assert logic.jobs == {} and of_type(out, EnqueueReservations) == [] and logic.stats["probes"] == 0


def test_per_task_probes_spread_like_per_task_sampling():
    """Over many one-task jobs on 4 node monitors, d = 2: each job's two probes are distinct and every
    node monitor is probed about as often (each pair of node monitors shows up)."""
    logic = cluster(4)
    pairs = Counter()
    for ref in range(1, 301):
        held = reservations(submit(logic, 1, ref=ref, sampling="per_task"))
        assert sorted(held.values()) == [1, 1]
        pairs[tuple(sorted(held))] += 1
    assert len(pairs) == 6 and min(pairs.values()) > 20
