"""SimConfig validation and trace reading: every configuration error path names what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, read_trace, simulate


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"policy": "fastest"}, "unknown policy 'fastest'"),
        ({"duration": "pareto"}, "unknown duration 'pareto'"),
        ({"queue_policy": "lifo"}, "unknown queue_policy 'lifo'"),
        ({"n_workers": 0}, "n_workers must be >= 1, got 0 .a simulation needs at least one worker"),
        ({"slots": 0}, "slots must be >= 1"),
        ({"tasks_per_job": 0}, "tasks_per_job must be >= 1"),
        ({"n_jobs": -1}, "n_jobs must be >= 0"),
        ({"n_schedulers": 0}, "n_schedulers must be >= 1"),
        ({"task_candidates": 0}, "task_candidates must be >= 1"),
        ({"seed": -1}, "seed must be"),
        ({"load": 0.0}, r"load must be in \(0, 1\) for an open system"),
        ({"load": 1.0}, r"load must be in \(0, 1\)"),
        ({"load": 1.5}, r"load must be in \(0, 1\)"),
        ({"load": float("nan")}, "load must be finite"),
        ({"mean_duration": 0.0}, "mean_duration must be > 0.0"),
        ({"network_delay": -0.001}, "network_delay must be >= 0.0"),
        ({"probe_ratio": 0.5}, "probe_ratio must be a finite number >= 1, got 0.5"),
        ({"probe_ratio": float("inf")}, "probe_ratio must be a finite number >= 1"),
        ({"bimodal_ratio": 0.5}, "bimodal_ratio must be >= 1.0"),
        ({"constrained_jobs": 1.5}, "constrained_jobs must be <= 1.0"),
        ({"constrained_tasks": -0.1}, "constrained_tasks must be >= 0.0"),
        ({"bimodal_long_fraction": 2.0}, "bimodal_long_fraction must be <= 1.0"),
        ({"constraint_workers": 0.0}, "constraint_workers must be > 0.0"),
        ({"user_weights": ()}, "user_weights must not be empty"),
        ({"user_weights": (1.0, 0.0)}, r"user_weights\[1\] must be > 0.0"),
        ({"user_weights": (1.0, 1.0), "user_demands": (1.0,)}, "user_demands must have one entry per user"),
        ({"user_demands": (0.0,)}, "user_demands must not all be 0"),
        ({"priority_shares": (0.5, -1.0)}, r"priority_shares\[1\] must be >= 0.0"),
    ],
)
def test_invalid_config_raises_value_error_naming_the_field(changes: dict[str, object], message: str) -> None:
    """Each bad field is rejected before simulating, with a message that says what is wrong."""
    with pytest.raises(ValueError, match=message):
        simulate(SimConfig(**changes))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_workers": 2.5}, "n_workers must be an int"),
        ({"n_workers": True}, "n_workers must be an int"),
        ({"load": "high"}, "load must be a number"),
        ({"cancellation": 1}, "cancellation must be a bool"),
        ({"user_weights": "3:1"}, "user_weights must be a sequence"),
    ],
)
def test_wrong_types_raise_type_error(changes: dict[str, object], message: str) -> None:
    """Wrong types are TypeError, not a crash or a silent conversion."""
    with pytest.raises(TypeError, match=message):
        simulate(SimConfig(**changes))  # type: ignore[arg-type]


def test_simulate_rejects_something_that_is_not_a_config() -> None:
    """simulate takes a SimConfig."""
    with pytest.raises(TypeError, match="config must be a SimConfig"):
        simulate({"policy": "sparrow"})  # type: ignore[arg-type]


def test_trace_ignores_load(tmp_path: Path) -> None:
    """A trace is replayed as is, so the open-system load check does not apply."""
    trace = tmp_path / "jobs.txt"
    trace.write_text("0 2 0.1\n")
    assert simulate(SimConfig(trace=trace, load=5.0)).job_response.shape == (1,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 2 0.1\n0.5 x 0.1\n", r"jobs.txt:2: n_tasks must be an integer, got 'x'"),
        ("0 2\n", r"jobs.txt:1: expected `arrival_time n_tasks duration\.\.\. \[field=value\.\.\.\]`"),
        ("# header\n\n0 3 0.1 0.2\n", r"jobs.txt:3: expected 1 or 3 durations \(n_tasks = 3\), got 2"),
        ("1.0 1 0.1\n0.5 1 0.1\n", r"jobs.txt:2: arrival_time 0.5 is earlier than the previous job's 1.0"),
        ("0 0 0.1\n", r"jobs.txt:1: n_tasks must be >= 1, got 0"),
        ("zero 1 0.1\n", r"jobs.txt:1: arrival_time must be a number, got 'zero'"),
        ("0 1 -0.1\n", r"jobs.txt:1: duration must be a finite number >= 0"),
        ("0 1 inf\n", r"jobs.txt:1: duration must be a finite number >= 0"),
        ("# nothing\n", r"jobs.txt: the trace holds no job"),
    ],
)
def test_malformed_trace_line_is_reported_with_its_line_number(tmp_path: Path, text: str, message: str) -> None:
    """A bad trace line gets a ValueError naming the file and line."""
    trace = tmp_path / "jobs.txt"
    trace.write_text(text)
    with pytest.raises(ValueError, match=message):
        simulate(SimConfig(trace=trace))


def test_missing_trace_file_raises_file_not_found(tmp_path: Path) -> None:
    """A trace path that does not exist is reported as such."""
    with pytest.raises(FileNotFoundError):
        simulate(SimConfig(trace=tmp_path / "absent.txt"))


def test_read_trace_expands_a_shared_duration_and_keeps_per_task_ones(tmp_path: Path) -> None:
    """One duration is shared by all the job's tasks; n durations are taken per task."""
    trace = tmp_path / "jobs.txt"
    trace.write_text("0.5 3 0.2  # comment\n1.5 2 0.1 0.4\n")
    t = read_trace(trace)
    assert t.arrival.tolist() == [0.5, 1.5]
    assert t.n_tasks.tolist() == [3, 2]
    np.testing.assert_allclose(t.durations, [0.2, 0.2, 0.2, 0.1, 0.4])


def test_binding_rejects_a_bad_trace_with_value_error() -> None:
    """The C++ side checks a trace it is handed directly too: ValueError, never a crash."""
    from sparrow_core import _core

    params = SimConfig().params()
    arrival, n_tasks, durations = np.array([1.0, 0.5]), np.array([1, 1]), np.array([0.1, 0.1])
    with pytest.raises(ValueError, match="trace job 1: arrival times must not decrease"):
        _core._simulate(params, {"arrival": arrival, "n_tasks": n_tasks, "durations": durations})
    with pytest.raises(ValueError, match="trace job 0: durations must be finite and >= 0"):
        _core._simulate(params, {"arrival": np.array([0.0]), "n_tasks": np.array([1]), "durations": np.array([-1.0])})
