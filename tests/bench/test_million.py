"""bench.million scaled down: the map and the jobs submitted together return every result, and the
report gives each rate beside the baseline's and RSS per queued task for every process."""

import re

from bench import million


def test_small_million_run_returns_every_result_and_reports_memory_per_task(capsys):
    """500 map tasks and 2 jobs of 300 on thread executors: run() raises if any result is missing or
    wrong; the report names the rate ratio and the per-task RSS of client, scheduler and node monitor."""
    args = [
        "--map-tasks",
        "500",
        "--jobs",
        "2",
        "--job-tasks",
        "300",
        "--baseline-tasks",
        "200",
        "--executor",
        "thread",
    ]
    assert million.main(args) == 0
    out = capsys.readouterr().out
    for run in ("500-task map", "2 jobs of 300 submitted together"):
        line = next(line for line in out.splitlines() if line.startswith(run))
        assert re.search(r"[\d.]+x the 200-task map's", line), line
        assert re.search(r"client [\d,-]+ B, scheduler [\d,-]+ B, node monitor [\d,-]+ B", line), line
