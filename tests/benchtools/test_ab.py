"""benchtools.ab's verdict: head over base per figure, rates and times each the right way round."""

import pytest

from benchtools import ab


def _run(map_rate, submit_rate, p50, cpu):
    return {"map": map_rate, "submit": submit_rate, "job_p50": p50, "map_cpu": cpu, "submit_cpu": cpu, "job_cpu": cpu}


def test_a_lower_rate_and_a_longer_time_are_both_worsenings_above_one():
    """Head's submit rate 30% lower and its CPU per task 30% higher both come out as 1.3x worse; an
    unchanged figure as 1.0x; each alternating pair's worsening is kept for the range."""
    base = [_run(300, 200, 40.0, 1000), _run(320, 220, 42.0, 1100)]
    head = [_run(300, 200 / 1.3, 40.0, 1300), _run(320, 220 / 1.3, 42.0, 1430)]
    rows = {label: (worse, pairs) for label, _, _, worse, pairs in ab.compare(base, head)}
    assert abs(rows["submit-loop tasks/s"][0] - 1.3) < 1e-9 and abs(rows["map CPU us/task"][0] - 1.3) < 1e-9
    assert rows["map tasks/s"][0] == 1.0 and rows["10-task job p50 ms"][0] == 1.0
    assert [round(p, 6) for p in rows["submit CPU us/task"][1]] == [1.3, 1.3]


def test_same_commit_and_a_factor_of_one_are_usage_errors(capsys):
    """Comparing a commit with itself, or a factor that fails on noise, exits 2 before building."""
    for argv in (["HEAD", "HEAD"], ["HEAD~1", "--factor", "1"]):
        with pytest.raises(SystemExit) as exit:
            ab.main(argv)
        assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "are the same commit" in err and "--factor must be > 1" in err
