"""A run's own probe placement (sparrow_experiments.placement): the schedulers of a real local cluster log it, it is
read back per job in trace order as simulator workers, and the replay writes it as the trace's probes=."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import trio

from sparrow_experiments.placement import (
    chain_gaps,
    empty_round_trips,
    first_idle_answers,
    placement_logs,
    run_placement,
)
from sparrow_experiments.queries import Query, QueryWorkload, Stage
from sparrow_experiments.replay import ReplayJob, ideal, replay, write_trace
from sparrow_experiments.run import QueryRecord, run_queries
from sparrow_runtime import NodeMonitorConfig
from sparrow_runtime.demo.workload import JobRecord
from sparrow_runtime.services.local_cluster import LocalCluster
from sparrow_runtime.services.placement_log import ENVIRONMENT, Answer, PlacementRecords, log_path, read_log


def record(scheduler: int, job_ids: list[int | None]) -> QueryRecord:
    stages = tuple(Stage("s", np.array([0.01]), ()) for _ in job_ids)
    handles = [SimpleNamespace(job_id=j) for j in job_ids]
    return QueryRecord(Query(0.0, "q", stages), stages=[None] * len(job_ids), scheduler=scheduler, handles=handles)  # type: ignore[arg-type]


def write_log(folder: Path, scheduler: str, jobs: dict[int, list[str]]) -> None:
    lines = [{"scheduler": scheduler}, *({"job": j, "nodes": n} for j, n in jobs.items())]
    (folder / f"{scheduler}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_each_job_gets_the_workers_of_its_own_scheduler_s_log(tmp_path: Path) -> None:
    """Two schedulers number jobs from 1 each: a query's job ids are looked up in its scheduler's log, and node
    monitor nm-i is worker i (repeats kept)."""
    write_log(tmp_path, "scheduler-0", {1: ["nm-2", "nm-0"], 2: ["nm-1", "nm-1"]})
    write_log(tmp_path, "scheduler-1", {1: ["nm-3", "nm-2"]})
    records = [record(0, [1]), record(1, [1]), record(0, [2])]
    got = run_placement(records, tmp_path, ["scheduler-0", "scheduler-1"], [f"nm-{i}" for i in range(4)])
    assert got is not None and got.probes == [(2, 0), (3, 2), (1, 1)]


def test_each_job_s_probes_are_listed_in_the_order_its_node_monitors_asked(tmp_path: Path) -> None:
    """The run's tie-break, replayed: a job's probes are listed by each node monitor's first GetTask for it (a task
    or NoTask), then the ones that never asked in the order they were sent; a stolen reservation's GetTask (the
    thief asking for another's) does not count, and a node monitor probed twice keeps both places."""
    lines = [
        {"scheduler": "scheduler-0"},
        {"job": 1, "nodes": ["nm-0", "nm-1", "nm-2", "nm-3"], "at": 0.0},
        {"job": 2, "nodes": ["nm-1", "nm-0", "nm-1"], "at": 0.1},
        {"answer": 1, "task": 0, "node": "nm-1", "stolen": True, "at": 0.5},
        {"answer": 1, "task": 0, "node": "nm-2", "stolen": False, "at": 1.0},
        {"answer": 2, "task": 0, "node": "nm-0", "stolen": False, "at": 1.05},
        {"answer": 1, "task": 1, "node": "nm-0", "stolen": False, "at": 1.1},
        {"answer": 1, "task": -1, "node": "nm-3", "stolen": False, "at": 1.2},
        {"answer": 1, "task": -1, "node": "nm-2", "stolen": False, "at": 1.3},
    ]
    (tmp_path / "scheduler-0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = run_placement([record(0, [1]), record(0, [2])], tmp_path, ["scheduler-0"], [f"nm-{i}" for i in range(4)])
    assert got is not None and got.probes == [(2, 0, 3, 1), (0, 1, 1)]
    assert got.sent == [0.0, 0.1]  # when each job's reservations left: its submission delay, replayed


def test_a_job_missing_from_the_logs_gives_no_placement(tmp_path: Path) -> None:
    """A job id the log does not hold, a job never accepted, a scheduler without a log: None (the model draws)."""
    write_log(tmp_path, "scheduler-0", {1: ["nm-0"]})
    ids = ["scheduler-0", "scheduler-1"]
    assert run_placement([record(0, [1]), record(0, [2])], tmp_path, ids, ["nm-0"]) is None
    assert run_placement([record(0, [None])], tmp_path, ids, ["nm-0"]) is None
    assert run_placement([record(1, [1])], tmp_path, ids, ["nm-0"]) is None


def test_a_node_monitor_the_cluster_does_not_have_is_an_error(tmp_path: Path) -> None:
    write_log(tmp_path, "scheduler-0", {1: ["nm-9"]})
    with pytest.raises(ValueError, match="'nm-9', not one of the cluster's"):
        run_placement([record(0, [1])], tmp_path, ["scheduler-0"], ["nm-0", "nm-1"])


def test_placement_logs_sets_the_folder_only_while_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside, SPARROW_PLACEMENT_LOG names a fresh folder; after, the variable is back as it was and the folder
    is gone."""
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    with placement_logs() as folder:
        assert os.environ[ENVIRONMENT] == str(folder) and folder.is_dir()
    assert ENVIRONMENT not in os.environ and not folder.exists()


def test_the_replay_writes_probes_for_sparrow_and_leaves_them_out_for_the_ideal(tmp_path: Path) -> None:
    """A placed job's trace line carries probes=; the omniscient ideal replays the same jobs without them (it
    would refuse them), and the placement decides sparrow's answer."""
    jobs = [ReplayJob(0.0, np.array([1.0, 1.0]), probes=(0, 0)), ReplayJob(0.1, np.array([1.0]), probes=(0,))]
    path = tmp_path / "t.trace"
    write_trace(jobs, path)
    assert path.read_text().splitlines()[0].endswith("probes=0,0")
    write_trace(jobs, path, placed=False)
    assert "probes" not in path.read_text()
    (queued,) = replay(jobs, policy="sparrow", node_monitors=3, slots=1)
    assert queued.job_response.tolist() == [2.0, 2.9]  # all on worker 0, one after the other
    assert ideal(jobs, node_monitors=3, slots=1).job_response.tolist() == [1.0, 1.0]


def answer(job: int, task: int, node: str, at: float, stolen: bool = False) -> Answer:
    return Answer(job, task, node, stolen, at)


def stage(starts: list[float], ends: list[float]) -> JobRecord:
    return JobRecord(0.0, len(starts), np.array(starts), np.array(ends))


def test_only_the_gaps_that_are_a_late_binding_round_trip_are_measured() -> None:
    """On nm-0, job 2's task follows job 1's: a chained pair (its reservation was sent before job 1's task ended),
    gap 3 ms. Not measured: job 3's task after a NoTask there (an empty GetTask), job 4's stolen task, job 5's
    task whose reservation was sent after the slot freed (an idle slot, not a chain), a node's first task."""
    log = PlacementRecords(
        probed_at={1: 0.0, 2: 0.5, 3: 0.5, 4: 0.5, 5: 3.5},
        answers=[
            answer(1, 0, "nm-0", 0.010),
            answer(2, 0, "nm-0", 1.0015),
            answer(9, -1, "nm-0", 2.002),  # NoTask after job 2's end
            answer(3, 0, "nm-0", 2.004),
            answer(4, 0, "nm-0", 3.002, stolen=True),
            answer(5, 0, "nm-0", 3.6),
            answer(6, 0, "nm-1", 0.01),
        ],
    )
    stages = {
        (0, 1): stage([0.011], [1.0]),
        (0, 2): stage([1.003], [2.0]),
        (0, 3): stage([2.006], [3.0]),
        (0, 4): stage([3.004], [3.5]),
        (0, 5): stage([3.602], [4.0]),
        (0, 6): stage([0.012], [1.0]),
    }
    assert chain_gaps([log], stages) == pytest.approx([0.003])


def test_an_empty_round_trip_is_a_notask_to_the_next_gettask_for_a_reservation_already_held() -> None:
    """On nm-0, a NoTask (job 1) then a GetTask for job 2, whose reservation was sent before it: 2 ms. Not counted:
    nm-1's next GetTask after its NoTask is for job 3, sent after it (a new reservation: idle time); nm-2's NoTask
    was for a stolen reservation, and nm-3's next GetTask is a stolen one (a thief's, for another's reservation)."""
    log = PlacementRecords(
        probed_at={1: 0.0, 2: 0.5, 3: 1.5},
        answers=[
            answer(1, -1, "nm-0", 1.000),
            answer(1, -1, "nm-1", 1.001),
            answer(1, -1, "nm-2", 1.001, stolen=True),
            answer(1, -1, "nm-3", 1.001),
            answer(2, 0, "nm-0", 1.002),
            answer(2, 1, "nm-2", 1.003),
            answer(2, -1, "nm-3", 1.004, stolen=True),
            answer(3, 0, "nm-1", 1.6),
        ],
    )
    assert empty_round_trips([log]) == pytest.approx([0.002])


def test_a_real_cluster_s_placement_is_every_job_s_reservations(tmp_path: Path) -> None:
    """A local cluster of 6 node monitors run under placement_logs: every job of 2 tasks has its 4 reservations
    (probe ratio 2) logged, on 4 distinct workers of the cluster, drawn per job, sent between the job's submission
    and its first task's start."""
    stages = [Stage("s", np.array([0.02, 0.02]), ()) for _ in range(40)]  # offered: 1.3x the slots: queues
    workload = QueryWorkload(tuple(Query(i * 0.005, "s", (s,)) for i, s in enumerate(stages)), 6, 0.2)
    with placement_logs() as folder:
        with LocalCluster(1, 6, 1, node_monitor=NodeMonitorConfig(executor="thread")) as cluster:
            records = trio.run(run_queries, cluster.schedulers, cluster.secret, workload)
        placement = run_placement(records, folder, cluster.scheduler_ids, cluster.node_ids)
        assert placement is not None and len(placement.probes) == 40
        assert all(len(set(p)) == 4 and set(p) <= set(range(6)) for p in placement.probes)
        assert len({frozenset(p) for p in placement.probes}) > 1  # drawn per job, not one placement for all
        for sent, r in zip(placement.sent, records, strict=True):  # after its submission, before its tasks start
            stage = r.stages[0]
            assert stage is not None and stage.submitted < sent < np.nanmin(stage.starts)
        log = read_log(log_path(folder, cluster.scheduler_ids[0]))
    stages_by_id = {(0, r.job_ids[0]): r.stages[0] for r in records}
    launched = [(a.job, a.task) for a in log.answers if a.task >= 0 and (0, a.job) in stages_by_id]
    assert sorted(launched) == sorted((j, t) for _, j in stages_by_id for t in range(2))  # each task once
    gaps = chain_gaps([log], stages_by_id)  # type: ignore[arg-type]
    assert gaps.size > 0 and (gaps > 0).all() and (gaps < 1.0).all()
    trips = empty_round_trips([log])
    assert (trips > 0).all() and (trips < 1.0).all()


def test_a_job_s_first_gettask_from_a_node_monitor_idle_when_its_reservations_left() -> None:
    """Job 1 finds every node monitor idle (both ask at 0.002). Job 2 is sent at 1.0: nm-0's task of job 1 ended
    at 0.9 and nm-0 asks at 1.004 (idle: counted); nm-1 runs job 1's other task until 1.5 (busy: not counted). Job
    3, sent at 2.0, is asked for by nm-2 at 2.006 after a NoTask there at 2.003 (something came between: not
    counted) and by nm-3 at 2.008 (idle: counted). Job 4's only GetTask is a stolen one (not counted): no entry."""
    log = PlacementRecords(
        probed_at={1: 0.0, 2: 1.0, 3: 2.0, 4: 3.0},
        answers=[
            answer(1, 0, "nm-0", 0.002),
            answer(1, 1, "nm-1", 0.002),
            answer(2, 0, "nm-0", 1.004),
            answer(2, 1, "nm-1", 1.501),
            answer(9, -1, "nm-2", 2.003),
            answer(3, 0, "nm-2", 2.006),
            answer(3, 1, "nm-3", 2.008),
            answer(4, 0, "nm-4", 3.01, stolen=True),
        ],
    )
    stages = {
        (0, 1): stage([0.003, 0.003], [0.9, 1.5]),
        (0, 2): stage([1.005, 1.502], [1.1, 1.6]),
        (0, 3): stage([2.007, 2.009], [2.1, 2.1]),
        (0, 4): stage([3.011], [3.1]),
    }
    assert first_idle_answers([log], stages) == {(0, 1): 0.002, (0, 2): 1.004, (0, 3): 2.008}
