"""The trace format's optional fields (sparrow_core/sim/_trace.py): `workers=` and `workers.T=`
constraints are read into flat arrays, old traces stay valid, and every malformed field is a
ValueError naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparrow_core.sim import read_trace


def trace_of(tmp_path: Path, text: str):
    path = tmp_path / "jobs.txt"
    path.write_text(text)
    return read_trace(path)


def test_trace_without_fields_has_no_constraint_arrays(tmp_path: Path) -> None:
    """An old-style trace reads as before; it only gains the line of each job."""
    t = trace_of(tmp_path, "# jobs\n0 2 0.1\n\n1 1 0.2\n")
    assert t.lines.tolist() == [2, 4]
    assert t.job_offsets is None and t.task_offsets is None
    assert set(t.arrays()) == {"arrival", "n_tasks", "durations", "lines"}


def test_constraint_fields_become_flat_arrays(tmp_path: Path) -> None:
    """Job and task constraints in trace order; jobs and tasks without any get empty ranges."""
    t = trace_of(tmp_path, "0 2 0.1 workers=4,2 workers.1=2,3\n1 1 0.2\n2 3 0.1 0.2 0.3 workers.2=9  # c\n")
    assert t.job_candidates.tolist() == [4, 2] and t.job_offsets.tolist() == [0, 2, 2, 2]
    assert t.task_candidates.tolist() == [2, 3, 9]
    assert t.task_offsets.tolist() == [0, 0, 2, 2, 2, 2, 3]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 2 0.1 colour=red", r"jobs.txt:1: unknown field 'colour'"),
        ("0 2 0.1 workers=1 workers=2", r"jobs.txt:1: workers= is given twice"),
        ("0 2 0.1 workers.1=1 workers.1=2", r"jobs.txt:1: workers.1= is given twice"),
        ("0 2 0.1 workers.2=1", r"jobs.txt:1: workers.2: the job has 2 tasks \(0 to 1\)"),
        ("0 2 0.1 workers.x=1", r"jobs.txt:1: workers.x: the task must be a number from 0, got 'x'"),
        ("0 2 0.1 workers.-1=1", r"jobs.txt:1: workers.-1: the task must be a number from 0"),
        ("0 2 0.1 workers=1,a", r"jobs.txt:1: workers must be worker ids separated by commas, got '1,a'"),
        ("0 2 0.1 workers=", r"jobs.txt:1: workers must be worker ids separated by commas, got ''"),
        ("0 2 0.1 workers=3,3", r"jobs.txt:1: workers: worker id 3 appears twice"),
        ("0 2 0.1 workers.0=-2", r"jobs.txt:1: workers.0: worker id -2 must be >= 0"),
        ("0 2 workers=1 0.1", r"jobs.txt:1: expected `arrival_time n_tasks duration"),
        ("0 2 0.1 workers=1 0.2", r"jobs.txt:1: durations must come before the field=value fields"),
    ],
)
def test_malformed_field_is_reported_with_its_line(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trace_of(tmp_path, line + "\n")
