"""benchtools.joblib_vs_loky scaled down: one round of the 10,000-call Parallel on both backends, reported
side by side with their ratio; a bad argument is refused."""

import re

import pytest

pytest.importorskip("joblib")

from benchtools import joblib_vs_loky


def test_one_round_of_the_tiny_workload_runs_on_both_backends_and_reports_the_ratio(capsys):
    assert joblib_vs_loky.main(["--repeat", "1", "--workloads", "tiny"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("tiny"))
    assert re.fullmatch(r"tiny(\s+[\d.]+){4}\s+[\d.]+x", line), line


def test_an_unknown_workload_is_refused():
    with pytest.raises(SystemExit):
        joblib_vs_loky.main(["--workloads", "huge"])
