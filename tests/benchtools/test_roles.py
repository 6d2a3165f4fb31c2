"""benchtools/roles.py: CPU and wake-ups per task split by process on a real LocalCluster, one build or several
alternating, and the roles found for the processes of a cluster; bad arguments are refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchtools import roles
from benchtools.asv_project import REPOSITORY

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_node_monitors_descendants_are_its_workers_and_nothing_else_is():
    """processes(): this process is the client, the node monitors' whole subtrees are the workers."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run(['sleep', '30'])"])
    try:
        deadline = time.monotonic() + 10
        found = roles.processes([], [sleeper.pid])
        while len(found["workers"]) < 1 and time.monotonic() < deadline:  # its child `sleep` has started
            time.sleep(0.05)
            found = roles.processes([], [sleeper.pid])
        assert found["client"] == [os.getpid()] and found["node_monitors"] == [sleeper.pid]
        assert len(found["workers"]) == 1 and found["workers"][0] != sleeper.pid
        assert found["scheduler"] == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_map_and_jobs_cost_every_process_something():
    """A short run: every role spent CPU, the workers woke for their tasks, and the job figure is per job."""
    per_task = roles.measure("map", 400, 1)
    per_job = roles.measure("job", 100, 1)
    for figures in (per_task, per_job):
        assert set(figures) == {
            "wall_us",
            "all_cpu_us",
            *(f"{role}_{kind}" for role in roles.ROLES for kind in ("cpu_us", "wakeups")),
        }
        assert all(figures[f"{role}_cpu_us"] > 0 for role in roles.ROLES), figures
        assert figures["all_cpu_us"] == pytest.approx(sum(figures[f"{role}_cpu_us"] for role in roles.ROLES))
    assert per_job["workers_wakeups"] >= 0.5  # a job's tasks reach a worker that waited for them
    assert per_job["wall_us"] > 5 * per_task["wall_us"]  # a job's latency, against a task's share of a map


def test_builds_alternate_and_each_figure_gets_a_ratio_to_the_first():
    """--pythons: the same python twice as two builds; the table names both and gives ratios."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchtools.roles",
            "--pythons",
            f"base={sys.executable},head={sys.executable}",
            "--tasks",
            "200",
            "--rounds",
            "1",
        ],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("per task (map, 200 tasks a round); median of 1 run(s) each; ratio to the first")
    assert lines[1].split() == ["base", "head"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(rows) >= {"wall_us", "all_cpu_us", "workers_cpu_us"}
    assert all(len(cells) == 3 and cells[2].startswith("(") and cells[2].endswith("x)") for cells in rows.values())


@pytest.mark.parametrize("argv", [["--tasks", "5"], ["--rounds", "0"], ["--figure", "pool"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        roles.main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err
