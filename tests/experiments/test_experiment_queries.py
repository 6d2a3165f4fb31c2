"""The cluster experiment's workload generator (sparrow_experiments.queries): deterministic for
a seed, offering the load asked for, with the query shapes it documents."""

from __future__ import annotations

import numpy as np
import pytest

from sparrow_experiments.queries import TEMPLATES, make_queries, mean_work, stage_widths


def _flat(workload) -> list:
    return [
        (q.arrival, q.template, [(s.name, s.parents, s.durations.tolist()) for s in q.stages]) for q in workload.queries
    ]


def test_the_same_seed_draws_the_same_queries_and_another_seed_others():
    a = make_queries(load=0.8, seconds=20.0, slots=32, seed=7)
    b = make_queries(load=0.8, seconds=20.0, slots=32, seed=7)
    c = make_queries(load=0.8, seconds=20.0, slots=32, seed=8)
    assert _flat(a) == _flat(b)
    assert _flat(a) != _flat(c)


@pytest.mark.parametrize(("load", "slots", "time_scale"), [(0.8, 32, 1.0), (0.5, 16, 0.25), (0.3, 5, 2.0)])
def test_queries_offer_the_requested_load(load: float, slots: int, time_scale: float):
    workload = make_queries(load=load, seconds=400.0 * time_scale, slots=slots, seed=1, time_scale=time_scale)
    assert workload.offered_load == pytest.approx(load, rel=0.05)
    arrivals = np.array([q.arrival for q in workload.queries])
    assert arrivals[0] == 0 and np.all(np.diff(arrivals) > 0) and arrivals[-1] < workload.seconds


def test_every_template_is_drawn_and_its_stages_have_their_widths_and_mean_durations():
    workload = make_queries(load=0.8, seconds=600.0, slots=32, seed=2)
    assert {q.template for q in workload.queries} == set(TEMPLATES)
    for name, stages in TEMPLATES.items():
        drawn = [q for q in workload.queries if q.template == name]
        for i, (_, _, ms, parents) in enumerate(stages):
            assert all(len(q.stages[i].durations) == stage_widths(name, 32)[i] for q in drawn)
            assert all(q.stages[i].parents == parents for q in drawn)
            durations = np.concatenate([q.stages[i].durations for q in drawn])
            assert durations.mean() == pytest.approx(ms / 1e3, rel=0.05)  # the lognormal keeps the mean


def test_stage_widths_scale_with_the_slots_and_never_drop_below_one_task():
    assert stage_widths("q6", 32) == [8, 1]
    assert stage_widths("q6", 64) == [16, 1]
    assert stage_widths("q3", 2) == [1, 1, 1, 1, 1, 1]
    assert mean_work("q6", 32) == pytest.approx(8 * 0.120 + 0.020)


def test_each_query_is_a_dag_whose_last_stage_is_its_only_sink():
    for name, stages in TEMPLATES.items():
        for i, (_, _, _, parents) in enumerate(stages):
            assert all(p < i for p in parents), name  # parents come first: submission order is topological
        waited_for = {p for _, _, _, parents in stages for p in parents}
        assert set(range(len(stages))) - waited_for == {len(stages) - 1}, name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"load": 1.0}, "load must be in (0, 1)"),
        ({"seconds": 0.0}, "seconds must be > 0"),
        ({"slots": 0}, "slots must be an int >= 1"),
        ({"time_scale": -1.0}, "time_scale must be > 0"),
    ],
)
def test_bad_arguments_are_refused_naming_them(kwargs: dict, message: str):
    args = {"load": 0.8, "seconds": 10.0, "slots": 8, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_queries(**args)
