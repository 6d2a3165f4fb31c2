"""benchtools.million scaled down: the map and the jobs submitted together return every result, and the
report gives each rate beside the baseline's and RSS per queued task for every process."""

import re

from benchtools import million


def test_small_million_run_returns_every_result_and_reports_memory_per_task(capsys):
    """500 map tasks and 2 jobs of 300 on thread executors pipelined 8 deep: run() raises if any result is
    missing or wrong; the report names the rate ratio and the per-task RSS of client, scheduler and node
    monitor."""
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
        "--pipeline-depth",
        "8",
    ]
    assert million.main(args) == 0
    out = capsys.readouterr().out
    for run in ("500-task map", "2 jobs of 300 submitted together"):
        line = next(line for line in out.splitlines() if line.startswith(run))
        assert re.search(r"[\d.]+x the 200-task map's", line), line
        assert re.search(r"client [\d,-]+ B, scheduler [\d,-]+ B, node monitor [\d,-]+ B", line), line


def test_the_jobs_are_queued_together_past_the_clients_default_backpressure(capsys, monkeypatch):
    """The jobs' run queues them all at once (its memory figure is per task queued together): with the
    client's default max_pending_tasks at 300, a second job of 300 would wait for the first to finish."""
    from sparrow_runtime import Client

    monkeypatch.setitem(Client.__init__.__kwdefaults__, "max_pending_tasks", 300)
    args = ["--map-tasks", "100", "--jobs", "2", "--job-tasks", "300", "--baseline-tasks", "100"]
    assert million.main([*args, "--executor", "thread"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("2 jobs of 300"))
    queued = int(re.search(r"\((\d[\d,]*) queued at most\)", line)[1].replace(",", ""))
    assert queued > 300, line
