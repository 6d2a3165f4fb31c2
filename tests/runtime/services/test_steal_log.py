"""A node monitor's steal log (services/steal_log.py): each attempt's time, victims, the one taken from and how many,
off unless asked for, bounded, read back with clear errors; a real stealing cluster logs attempts on its peers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import trio

from sparrow_experiments.placement import placement_logs
from sparrow_experiments.queries import Query, QueryWorkload, Stage
from sparrow_experiments.run import run_queries
from sparrow_runtime import NodeMonitorConfig
from sparrow_runtime.services import steal_log
from sparrow_runtime.services.config import SchedulerConfig
from sparrow_runtime.services.local_cluster import LocalCluster
from sparrow_runtime.services.placement_log import ENVIRONMENT
from sparrow_runtime.services.steal_log import Attempt, StealLog, read_steal_log, read_steal_logs

NO_BIND_IDLE = SchedulerConfig(bind_idle=False)  # every task through a reservation a thief may take


def test_attempts_are_read_back_as_written(tmp_path: Path) -> None:
    """The header names the node monitor and its steal address; each attempt comes back as it was logged."""
    log = StealLog(tmp_path / "nm-0.jsonl", "nm-0", "127.0.0.1:5000")
    log.attempt(1.5, ["127.0.0.1:5001", "127.0.0.1:5002"], "127.0.0.1:5002", 1)
    log.attempt(2.25, ["127.0.0.1:5003"], "", 0)
    log.close()
    records = read_steal_log(log.path)
    assert (records.node, records.address) == ("nm-0", "127.0.0.1:5000")
    assert records.attempts == [
        Attempt(1.5, ("127.0.0.1:5001", "127.0.0.1:5002"), "127.0.0.1:5002", 1),
        Attempt(2.25, ("127.0.0.1:5003",), "", 0),
    ]


def test_a_log_stops_at_its_bound_and_says_how_many_attempts_it_left_out(tmp_path: Path) -> None:
    log = StealLog(tmp_path / "nm.jsonl", "nm", "a:1", max_lines=2)
    for i in range(5):
        log.attempt(float(i), ["b:2"], "", 0)
    log.close()
    assert [a.at for a in read_steal_log(log.path).attempts] == [0.0, 1.0]
    assert log.path.read_text().splitlines()[-1] == '{"dropped":3}'


def test_the_environment_turns_the_log_on_in_a_folder_of_its_own(tmp_path: Path, monkeypatch) -> None:
    """SPARROW_PLACEMENT_LOG=DIR: DIR/steals/<node id>.jsonl (unsafe characters replaced); unset: no log."""
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert steal_log.from_environment("nm-0", "a:1") is None
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    log = steal_log.from_environment("host:7000", "a:1")
    assert log is not None and log.path == tmp_path / "steals" / "host_7000.jsonl"
    log.close()
    assert [r.node for r in read_steal_logs(tmp_path)] == ["host:7000"]


def test_a_folder_that_cannot_be_written_leaves_the_log_off(tmp_path: Path, monkeypatch, caplog) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "file"))
    assert steal_log.from_environment("nm-0", "a:1") is None
    assert "no steal log" in caplog.text


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"at": 1.0, "victims": [], "chose": "", "took": 0}], "first line must name the node"),
        ([{"node": "n", "address": "a"}, {"at": "x", "victims": [], "chose": "", "took": 0}], ":2: an attempt"),
        ([{"node": "n", "address": "a"}, {"at": 1.0, "victims": [3], "chose": "", "took": 0}], ":2: an attempt"),
        ([{"node": "n", "address": "a"}, {"at": 1.0, "victims": ["b"], "chose": "", "took": -1}], ":2: an attempt"),
        ([{"node": "n", "address": "a"}, {"what": 1}], ":2: not a steal log line"),
        ([], "empty, not a steal log"),
    ],
)
def test_a_line_that_is_not_the_log_s_is_an_error_naming_it(tmp_path: Path, lines: list, message: str) -> None:
    path = tmp_path / "nm.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ValueError, match=message):
        read_steal_log(path)


def test_a_last_line_cut_short_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "nm.jsonl"
    path.write_text('{"node":"n","address":"a"}\n{"at":1.0,"victims":["b"],"chose":"","took":0}\n{"at":2.0,"vic')
    assert [a.at for a in read_steal_log(path).attempts] == [1.0]


def test_a_stealing_cluster_logs_its_attempts_on_its_peers(tmp_path: Path) -> None:
    """6 node monitors, stealing on, two long jobs holding 4 of them while short jobs queue behind: every node
    monitor writes a log naming its own steal address; the attempts probe 2 distinct peers each (1 while the
    scheduler knew one only; never the thief), in time order, and some take reservations, each from one of the
    attempt's victims."""
    long = [Query(0.0, "long", (Stage("long", np.array([0.5, 0.5]), ()),)) for _ in range(2)]
    short = [Query(0.02 + i * 0.01, "short", (Stage("short", np.array([0.01, 0.01]), ()),)) for i in range(20)]
    workload = QueryWorkload(tuple(long + short), 6, 0.3)
    with placement_logs() as folder:
        with LocalCluster(
            1,
            6,
            1,
            node_monitor=NodeMonitorConfig(executor="thread", steal=True),
            scheduler=NO_BIND_IDLE,
            dashboard=False,
        ) as cluster:
            trio.run(run_queries, cluster.schedulers, cluster.secret, workload)
        logs = read_steal_logs(folder)
    assert sorted(r.node for r in logs) == sorted(cluster.node_ids)
    addresses = {r.address for r in logs}
    assert len(addresses) == 6
    attempts = [(r.address, a) for r in logs for a in r.attempts]
    for thief, a in attempts:
        assert len(set(a.victims)) == len(a.victims) in (1, 2) and thief not in a.victims
        assert set(a.victims) <= addresses
        assert (a.took > 0) == (a.chose != "") and (not a.chose or a.chose in a.victims)
    for r in logs:
        assert [a.at for a in r.attempts] == sorted(a.at for a in r.attempts)
    assert sum(a.took for _, a in attempts) > 0
