"""`sparrow experiment cluster`: a small run writes its report and figure; bad settings fail at once."""

from __future__ import annotations

import re

from .conftest import clean_env, run_sparrow


def test_a_small_cluster_experiment_writes_its_report_and_figure(tmp_path):
    out = tmp_path / "paper"
    done = run_sparrow(
        "experiment",
        "cluster",
        "--runs",
        "2",
        "--seconds",
        "1",
        "--schedulers",
        "2",
        "--node-monitors",
        "2",
        "--slots",
        "2",
        "--time-scale",
        "0.25",
        "--out",
        str(out),
        env=clean_env(tmp_path, CI="true", TERM="dumb"),
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"run 2 of 2: \d+ queries \(\d+ stages, \d+ tasks", done.stdout)
    assert "The simulator's prediction of the query response time is within" in done.stdout
    page = (out / "cluster.md").read_text()
    assert "sparrow experiment cluster --runs 2 --seconds 1" in page
    assert re.search(r"\| p50 \| [\d.,]+ \([\d.,]+-[\d.,]+\) \| [\d.,]+ \(", page)  # median (range) per cell
    assert re.search(r"- run 2: offered load \d+%, \d+ queries; load average", page)
    assert (out / "cluster.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_settings_fail_before_any_cluster_starts(tmp_path):
    env = clean_env(tmp_path)
    done = run_sparrow("experiment", "cluster", "--runs", "0", env=env)
    assert done.returncode == 2
    assert "argument --runs: expected an integer >= 1, got '0'" in done.stderr
    done = run_sparrow("experiment", "cluster", "--load", "1.5", "--out", str(tmp_path / "x"), env=env)
    assert done.returncode == 2
    assert "argument --load: expected a number > 0 and < 1, got '1.5'" in done.stderr
    assert not (tmp_path / "x").exists()
