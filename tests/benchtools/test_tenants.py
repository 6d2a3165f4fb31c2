"""benchtools/tenants.py: a child measures users taking turns on one node monitor (every figure a positive
number, the first pass starting a worker per user), and bad arguments are refused."""

from __future__ import annotations

import subprocess
import sys

from benchtools import tenants


def test_a_child_measures_users_taking_turns() -> None:
    figures = tenants.measure(users=2, jobs=4)
    assert set(figures) == {"first_pass_s", "tasks_per_s", "p50_ms"}
    assert all(value > 0 for value in figures.values())


def test_bad_arguments_are_refused() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "benchtools.tenants", "--python", sys.executable, "--users", "0"],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 2 and "--users, --jobs and --repeat must be >= 1" in ran.stderr
