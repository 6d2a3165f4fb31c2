# The kernel tour (python -m sparrow_core.demo) runs and reports decisions that hold.
import re

from sparrow_core import demo


def test_demo_reports_its_decisions_and_speeds(capsys):
    """Each section prints; the fair-share split at 3:1 over 20 pops is 15 / 5."""
    demo.main()
    out = capsys.readouterr().out
    assert "Fair sharing at weights 3:1, 20 pops: {'alice': 15, 'bob': 5}" in out
    assert "all launched: True" in out
    assert re.search(r"batch sampling of 200 probes among 10,000 workers, [\d,]+/s jobs", out)
    assert re.search(r"fair reservation queue, 100 users, [\d,]+/s push\+pop pairs", out)
