"""benchtools.scheduler_capacity end to end, briefly: a real scheduler process runs tasks for light node
monitors that speak the protocol, and the report gives its CPU per task and the projection."""

import re

from benchtools import scheduler_capacity


def test_short_capacity_run_measures_the_scheduler_and_projects_ten_and_a_hundred(capsys):
    """2 light node monitors x 2 slots for 1 s: tasks finish (a positive count and rate), the
    scheduler's CPU per task is measured, and 1, 10 and 100 schedulers are projected."""
    assert (
        scheduler_capacity.main(
            [
                "--node-monitors",
                "2",
                "--slots",
                "2",
                "--seconds",
                "1",
                "--warmup",
                "0.5",
                "--job-size",
                "10",
                "--in-flight",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    tasks = int(re.search(r"  ([\d,]+) tasks in", out).group(1).replace(",", ""))
    assert tasks > 0
    assert re.search(r"scheduler CPU [\d.]+ us per task: [\d,]+ task decisions/s per scheduler core", out)
    for n in (1, 10, 100):
        assert re.search(rf"\s{n} schedulers: [\d,]+ tasks/s", out), out
