"""The soak command (benchtools/soak.py): its per-task outcome count catches a missing, a second, a failed
or a misrouted outcome, and a short run on a real LocalCluster passes and reports every service."""

from __future__ import annotations

import re

import cloudpickle

from benchtools.soak import Tally, main
from sparrow_runtime.wire.messages import Outcome


def _ok(value) -> Outcome:
    return Outcome(True, cloudpickle.dumps(value))


def test_tally_counts_outcomes_per_task_id():
    tally = Tally()
    tally.expected.update({(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)})
    tally.record(0, 0, _ok((0, 0)))
    tally.record(0, 1, _ok((0, 1)))
    tally.record(0, 1, _ok((0, 1)))  # a second outcome
    tally.record(0, 2, _ok((9, 9)))  # the value of another task
    tally.record(1, 0, Outcome(False, b"", "executor process 7 died while running the task (exit status 3)"))
    tally.record(5, 0, _ok((5, 0)))  # a task nobody submitted; (1, 1) gets none
    assert tally.verdict() == {
        "tasks": 5,
        "exactly one outcome": 3,
        "no outcome": 1,
        "more than one": 1,
        "outcomes for unknown tasks": 1,
        "failed": 1,
        "wrong value": 1,
    }


def test_short_soak_passes_and_reports_every_service(capsys):
    assert main(["--minutes", "0.05", "--node-monitors", "2", "--slots", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "soak: PASS: every task had exactly one successful outcome" in out
    assert "no outcome:                  0" in out and "more than one:               0" in out
    assert re.search(r"scheduler (unix:\S+/scheduler-0\.sock|127\.0\.0\.1:\d+)", out)  # by its address
    for role in ("node monitor nm-0", "node monitor nm-1"):
        assert role in out
