"""The scheduler's placement log (services/placement_log.py): each job's probed node monitors, as the
scheduler sent them, off unless asked for, bounded, and never able to stop the scheduler."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from sparrow_runtime.services import placement_log
from sparrow_runtime.services.placement_log import (
    PlacementLog,
    from_environment,
    log_path,
    read_log,
    read_placements,
)
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.messages import EnqueueReservations, GetTask, RegisterNodeMonitor, SubmitJob


def logic_with_nodes(n: int, log: PlacementLog | None) -> SchedulerLogic:
    logic = SchedulerLogic(seed=3, bind_idle=False)  # every task through a reservation
    logic.placements = log
    for i in range(n):
        logic.on_node_messages(f"peer{i}", [RegisterNodeMonitor(f"nm-{i}", 1)])
    return logic


def sent(out: list) -> Counter:
    """node monitor id (nm-i for peer i) -> reservations sent there."""
    return Counter({f"nm-{peer.removeprefix('peer')}": m.count for peer, m in out if type(m) is EnqueueReservations})


def test_the_log_holds_exactly_the_reservations_the_scheduler_sent(tmp_path: Path) -> None:
    """Every job's line lists the node monitors its EnqueueReservations went to, as many times as reservations
    each got (a job of 7 tasks on 3 node monitors gets repeats), and the scheduler's id comes first."""
    path = tmp_path / "s.jsonl"
    log = PlacementLog(path, "scheduler-0")
    logic = logic_with_nodes(3, log)
    expected = {}
    for ref, n in enumerate([1, 2, 7, 3], start=1):
        out = logic.on_client_messages("c", [SubmitJob(ref, [b"t"] * n)])
        expected[ref] = sent(out)  # job ids are given from 1 in submission order
    log.close()
    assert path.read_text().splitlines()[0] == '{"scheduler":"scheduler-0"}'
    placements = read_placements(path)
    assert {job: Counter(nodes) for job, nodes in placements.items()} == expected
    assert sum(expected[3].values()) == 14 and max(expected[3].values()) > 1


def test_without_a_log_the_scheduler_sends_the_same_reservations(tmp_path: Path) -> None:
    """The log only watches: the same seed probes the same node monitors with it and without it."""
    log = PlacementLog(tmp_path / "a.jsonl", "s")
    with_log = logic_with_nodes(4, log)
    without = logic_with_nodes(4, None)
    for ref in range(1, 20):
        job = [SubmitJob(ref, [b"t"] * (ref % 3 + 1))]
        assert sent(with_log.on_client_messages("c", job)) == sent(without.on_client_messages("c", job))
    log.close()
    assert len(read_placements(log.path)) == 19


def test_a_log_stops_at_its_bound_and_says_how_many_rounds_it_left_out(tmp_path: Path) -> None:
    """Past max_lines nothing more is written; closing records the count dropped."""
    path = tmp_path / "s.jsonl"
    log = PlacementLog(path, "s", max_lines=2)
    for job in range(5):
        log.record(job, ["nm-0"])
    log.close()
    assert read_placements(path) == {0: ["nm-0"], 1: ["nm-0"]}
    assert path.read_text().splitlines()[-1] == '{"dropped":3}'


def test_the_environment_turns_the_log_on_in_the_folder_it_names(tmp_path: Path, monkeypatch) -> None:
    """SPARROW_PLACEMENT_LOG=DIR: a file per scheduler id (unsafe characters replaced); unset: no log."""
    monkeypatch.delenv(placement_log.ENVIRONMENT, raising=False)
    assert from_environment("scheduler-0") is None
    monkeypatch.setenv(placement_log.ENVIRONMENT, str(tmp_path))
    log = from_environment("scheduler@127.0.0.1:9/x")
    assert log is not None
    log.close()
    assert log.path == log_path(tmp_path, "scheduler@127.0.0.1:9/x") == tmp_path / "scheduler_127.0.0.1_9_x.jsonl"
    assert log.path.exists()


def test_an_unwritable_folder_leaves_the_log_off_with_a_warning(tmp_path: Path, monkeypatch, caplog) -> None:
    """A folder that does not exist gives no log (the scheduler runs on) and one warning naming it."""
    monkeypatch.setenv(placement_log.ENVIRONMENT, str(tmp_path / "missing"))
    with caplog.at_level(logging.WARNING, logger=placement_log.__name__):
        assert from_environment("s") is None
    assert "missing" in caplog.text


def test_a_write_that_fails_turns_the_log_off(tmp_path: Path, caplog) -> None:
    """A failing write (here: the file closed under the log) is logged once and later records are no-ops."""
    log = PlacementLog(tmp_path / "s.jsonl", "s")
    assert log._file is not None
    log._file.close()
    with caplog.at_level(logging.WARNING, logger=placement_log.__name__):
        log.record(1, ["nm-0"])
        log.record(2, ["nm-0"])
    assert caplog.text.count("it is off from here") == 1
    log.close()


def test_a_log_cut_short_reads_up_to_its_last_whole_line(tmp_path: Path) -> None:
    """A scheduler killed mid-line leaves a partial last line: it is left out; a bad line elsewhere is an error."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"scheduler":"s"}\n{"job":1,"nodes":["nm-0"]}\n{"job":2,"no')
    assert read_placements(path) == {1: ["nm-0"]}
    path.write_text('{"scheduler":"s"}\nnot json\n{"job":1,"nodes":["nm-0"]}\n')
    with pytest.raises(ValueError, match=r"s.jsonl:2: not a JSON line"):
        read_placements(path)
    path.write_text('{"job":"x","nodes":["nm-0"]}\n')
    with pytest.raises(ValueError, match="needs an int job"):
        read_placements(path)


def test_answers_are_logged_with_the_task_the_node_monitor_got(tmp_path: Path) -> None:
    """Two GetTasks for a 1-task job: the first gets task 0, the second (the job done) NoTask: both are in the
    log, in order and timed, the second as task -1; the job's round is timed too."""
    path = tmp_path / "s.jsonl"
    log = PlacementLog(path, "s")
    logic = logic_with_nodes(2, log)
    out = logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    first, second = [peer for peer, m in out if type(m) is EnqueueReservations]
    logic.on_node_messages(first, [GetTask(1)])
    logic.on_node_messages(second, [GetTask(1)])
    log.close()
    records = read_log(path)
    assert [(a.job, a.task, a.node, a.stolen) for a in records.answers] == [
        (1, 0, f"nm-{first.removeprefix('peer')}", False),
        (1, -1, f"nm-{second.removeprefix('peer')}", False),
    ]
    assert records.probed_at[1] <= records.answers[0].at <= records.answers[1].at


def test_a_stolen_reservation_s_answer_names_the_node_monitor_it_was_taken_from(tmp_path: Path) -> None:
    """A node monitor not probed asks for a task of a 1-task job on behalf of one that was (a thief, GetTask's
    origin): the log marks it stolen with that origin, which a replay of the run's steals needs; the asker's own
    reservation has none."""
    path = tmp_path / "s.jsonl"
    log = PlacementLog(path, "s")
    logic = SchedulerLogic(seed=3, bind_idle=False)  # every task through a reservation
    logic.placements = log
    for i in range(6):  # stealing node monitors (a steal address each)
        logic.on_node_messages(f"peer{i}", [RegisterNodeMonitor(f"nm-{i}", 1, (), f"p{i}", steal_address=f"a{i}")])
    out = logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    probed = [peer for peer, m in out if type(m) is EnqueueReservations]
    victim = f"nm-{probed[0].removeprefix('peer')}"
    thief = next(f"peer{i}" for i in range(6) if f"peer{i}" not in probed)
    logic.on_node_messages(thief, [GetTask(1, origin=victim)])
    logic.on_node_messages(probed[1], [GetTask(1)])
    log.close()
    records = read_log(path)
    assert [(a.node, a.stolen, a.origin) for a in records.answers] == [
        (f"nm-{thief.removeprefix('peer')}", True, victim),
        (f"nm-{probed[1].removeprefix('peer')}", False, ""),
    ]
    assert records.answers[0].task == 0  # the victim's reservation was consumed: the thief got the task


def test_a_job_probed_again_keeps_its_first_round(tmp_path: Path) -> None:
    """A re-probe after a lost node monitor adds a line; the reader keeps the job's first placement."""
    path = tmp_path / "s.jsonl"
    log = PlacementLog(path, "s")
    log.record(1, ["nm-0", "nm-1"])
    log.record(1, ["nm-2"])
    log.close()
    assert read_placements(path) == {1: ["nm-0", "nm-1"]}
