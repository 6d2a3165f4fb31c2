"""Notebook views of a simulation (SimResult) and a sweep: the repr is one line with the policy, load and
percentiles; the HTML card has the configuration and the summary's figures, a sweep one row per point."""

from __future__ import annotations

import re

from sparrow_core._html import number
from sparrow_core.sim import SimConfig, simulate
from sparrow_core.sim.sweep import run_sweep

CONFIG = SimConfig(n_workers=50, n_jobs=100, tasks_per_job=5, load=0.7, seed=3)


def test_a_simulation_shows_its_configuration_and_summary():
    """The card and the repr give what was simulated and the response-time percentiles of summary()."""
    result = simulate(CONFIG)
    summary = result.summary()
    html = result._repr_html_()
    for fact in ("sparrow", "0.7", "50 x 1 slots", "100 (500 tasks)"):
        assert fact in html, fact
    for key in ("mean", "p50", "p95", "p99", "response_over_ideal"):
        assert f">{number(summary[key])}</td>" in html, key
    assert repr(result) == (
        f"<SimResult policy=sparrow load=0.7 workers=50 jobs=100 p50={number(summary['p50'])} "
        f"p99={number(summary['p99'])}>"
    )


def test_a_simulation_with_no_job_after_the_warm_up_says_so():
    """n_jobs=0 leaves no summary: the view says so instead of raising."""
    result = simulate(SimConfig(n_workers=10, n_jobs=0, tasks_per_job=1, load=0.5))
    assert "no summary" in result._repr_html_() and "p50" not in repr(result)


def test_a_sweep_shows_one_row_per_point():
    """Each (policy, load) is a row with its mean and its ratio to omniscient (blank when there is none)."""
    sweep = run_sweep(CONFIG, ["sparrow", "omniscient"], [0.5, 0.8])
    html = sweep._repr_html_()
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in html.split("<tr>")[1:]]
    rows = [row for row in rows if len(row) == 7]
    assert [(row[0], row[1]) for row in rows] == [(str(r["policy"]), str(r["load"])) for r in sweep.rows]
    assert all(row[2] == number(float(r["mean"])) for row, r in zip(rows, sweep.rows))
    assert repr(sweep) == "<Sweep points=4 policies=omniscient,sparrow loads=0.5,0.8>"
