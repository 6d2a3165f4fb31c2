"""Notebook views of a simulation and a sweep: what it simulated and its summary (SimResult), the table
of points (Sweep). The classes' `_repr_html_` and `__repr__` are one line each, calling these."""

from __future__ import annotations

import math
from typing import Any

from .._html import card, escape, number, plain, table

# a SimResult and a Sweep, read by their attributes (both import this module: no import back)
ViewedResult = Any
ViewedSweep = Any

_SUMMARY = (
    ("mean", "mean response (s)"),
    ("p50", "p50 (s)"),
    ("p95", "p95 (s)"),
    ("p99", "p99 (s)"),
    ("response_over_ideal", "over the ideal"),
    ("no_queueing", "jobs with no queueing"),
    ("mean_task_wait", "mean task wait (s)"),
)


def _summary(result: ViewedResult) -> dict[str, float] | None:
    try:
        return result.summary()
    except ValueError:  # no job after the warm-up
        return None


def sim_result_repr(result: ViewedResult) -> str:
    c = result.config
    fields = dict(policy=c.policy, load=c.load, workers=c.n_workers, jobs=len(result.job_response))
    summary = _summary(result)
    if summary is not None:
        fields.update(p50=number(summary["p50"]), p99=number(summary["p99"]))
    return plain("SimResult", **fields)


def sim_result_html(result: ViewedResult) -> str:
    c = result.config
    facts = [
        ("policy", escape(c.policy)),
        ("load", escape(c.load)),
        ("workers", f"{c.n_workers:,} x {c.slots} slots"),
        ("jobs", f"{len(result.job_response):,} ({result.n_tasks:,} tasks)"),
        ("probe ratio", escape(c.probe_ratio)),
        ("seed", escape(c.seed)),
        ("simulated", f"{number(result.end_time)} s in {number(result.wall_time)} s of wall time"),
    ]
    summary = _summary(result)
    if summary is None:
        return card("Sparrow simulation", facts, "<p>No job after the warm-up: no summary.</p>")
    rows = [(label, number(summary[key])) for key, label in _SUMMARY if key in summary]
    return card("Sparrow simulation", facts, table(["after a 10% warm-up", ""], rows))


_COLUMNS = ("policy", "load", "mean", "p50", "p99", "vs_omniscient", "no_queueing")


def sweep_repr(sweep: ViewedSweep) -> str:
    policies = sorted({str(row["policy"]) for row in sweep.rows})
    loads = sorted({float(row["load"]) for row in sweep.rows})
    return plain("Sweep", points=len(sweep.rows), policies=",".join(policies), loads=",".join(map(str, loads)))


def sweep_html(sweep: ViewedSweep) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return "" if math.isnan(value) else number(value)
        return str(value)

    rows = [[cell(row[k]) for k in _COLUMNS] for row in sweep.rows]
    facts = [("points", str(len(sweep.rows)))]
    return card("Sparrow sweep", facts, table(_COLUMNS, rows))
