"""`sparrow experiment steal-study`: the steal experiment's job mixes in the simulator alone, one row per mix on
its page, and bad settings fail before anything is simulated."""

from __future__ import annotations

import re

from sparrow_experiments.steal_design import CANDIDATES

from .conftest import clean_env, run_sparrow


def test_a_short_study_writes_a_row_per_mix_and_the_choice(tmp_path):
    out = tmp_path / "paper"
    done = run_sparrow(
        "experiment", "steal-study", "--seeds", "2", "--seconds", "4", "--out", str(out), env=clean_env(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = (out / "steal-study.md").read_text()
    assert "sparrow experiment steal-study --seeds 2 --seconds 4" in page and "seeds 100-101." in page
    rows = re.findall(r"^\| (\S+)[^|]* \| \d \| \d+% \| \d+ \| \d+% \|( [\d./%]+ \|){7}$", page, re.MULTILINE)
    assert [name for name, _ in rows] == [name.split()[0] for name, _ in CANDIDATES]
    assert "- Admissible (long tasks >= 25x the short" in page
    assert "(network 1 ms, submission to an idle start 8 ms, result 3 ms, steal wait 1 ms: a quiet run's" in page


def test_the_hops_are_the_ones_asked(tmp_path):
    """A loaded host's hops (3 ms one way, thieves 5 ms late) reach the model and the page."""
    out = tmp_path / "paper"
    done = run_sparrow(
        "experiment",
        "steal-study",
        *("--seeds", "1", "--seconds", "2", "--network", "3", "--steal-wait", "5", "--out", str(out)),
        env=clean_env(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    page = (out / "steal-study.md").read_text()
    assert "(network 3 ms, submission to an idle start 14 ms, result 3 ms, steal wait 5 ms: as asked)" in page


def test_bad_settings_fail_before_anything_is_simulated(tmp_path):
    done = run_sparrow(
        "experiment", "steal-study", "--seeds", "0", "--out", str(tmp_path / "x"), env=clean_env(tmp_path)
    )
    assert done.returncode == 2 and "argument --seeds: expected an integer >= 1, got '0'" in done.stderr
    assert not (tmp_path / "x").exists()
