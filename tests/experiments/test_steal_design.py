"""The steal experiment's designs in the simulator alone (sparrow_experiments.steal_design): the figures that decide how
well the short p50 is conditioned are counted right, a mix is drawn as designed, and the study runs the model."""

import numpy as np
import pytest

from sparrow_experiments.steal import LONG_FRACTION, LONG_MS, SHORT_MS, WIDTH, Mix, make_mixed
from sparrow_experiments.steal_design import (
    CANDIDATES,
    SeedFigures,
    admissible,
    halved,
    render,
    short_figures,
    study,
    verdict,
)


def test_short_figures_count_the_blocked_and_the_points_near_the_p50():
    """Short jobs of 0.1-0.109 s (10) and 1-5 s (10) with a long one: 50% blocked; the p50 lies between 0.109 and
    1 s, so no short job is within 10% of it; with 11 fast ones the p50 is 0.11 s and those 11 of 21 lie within 10%."""
    fast = 0.1 + 0.001 * np.arange(10)
    slow = np.linspace(1, 5, 10)
    response = np.concatenate([fast, slow, [9.0]])
    long = np.array([False] * 20 + [True])
    blocked, p50, points = short_figures(response, long)
    assert blocked == 0.5 and 0.109 < p50 < 1 and points == 0
    response = np.concatenate([fast, [0.11], slow, [9.0]])
    blocked, p50, points = short_figures(response, np.array([False] * 21 + [True]))
    assert p50 == pytest.approx(0.11) and points == pytest.approx(100 * 11 / 21) and blocked == pytest.approx(10 / 21)
    with pytest.raises(ValueError, match="no short job"):
        short_figures(np.array([1.0]), np.array([True]))


def test_the_default_mix_is_the_experiments_and_another_is_drawn_as_designed():
    """Mix() is the module's constants (77% of the slot time long) and draws the same jobs as make_mixed always
    did; Mix(width=4, long_fraction=0.12) gives 4-task jobs, about 12% long, at the same offered load."""
    assert (Mix().short_ms, Mix().long_ms, Mix().long_fraction, Mix().width) == (
        SHORT_MS,
        LONG_MS,
        LONG_FRACTION,
        WIDTH,
    )
    assert round(Mix().long_share, 2) == 0.77
    plain, long = make_mixed(load=0.85, seconds=200, slots=16, seed=1)
    same, long_same = make_mixed(load=0.85, seconds=200, slots=16, seed=1, mix=Mix())
    assert (long == long_same).all() and [q.stages[0].durations.tolist() for q in plain.queries] == [
        q.stages[0].durations.tolist() for q in same.queries
    ]
    wide, long_wide = make_mixed(load=0.85, seconds=200, slots=16, seed=1, mix=Mix(width=4, long_fraction=0.12))
    assert all(len(q.stages[0].durations) == 4 for q in wide.queries)
    assert abs(long_wide.mean() - 0.12) < 0.02 and 0.7 < wide.offered_load < 1.0
    with pytest.raises(ValueError, match="long fraction"):
        make_mixed(load=0.85, seconds=10, slots=4, seed=0, mix=Mix(long_fraction=1.5))


def test_the_study_simulates_each_seed_off_and_on():
    """Without long jobs nothing is blocked and stealing changes little; with the experiment's mix at 0.85 some
    short jobs wait behind long tasks with stealing off, fewer with it on. The page has a row per design."""
    none = study(Mix(long_fraction=0.0), [1, 2], load=0.5, seconds=10, node_monitors=8, time_scale=1.0)
    assert [f.seed for f in none] == [1, 2] and all(f.blocked_off == f.blocked_on == 0 for f in none)
    assert all(f.long_jobs == 0 and 0.5 < f.speedup < 2 for f in none)
    mixed = study(Mix(), [3], load=0.85, seconds=60, node_monitors=16, time_scale=4.0)[0]
    assert mixed.long_jobs > 0 and mixed.blocked_off > mixed.blocked_on and mixed.speedup > 1
    page = render([("x", Mix(), none), ("y", Mix(width=4), none)], command="c", setup="s")
    assert page.count("\n| x | 2 | 12% | 500 | 77% |") == 1 and "\n| y | 4 |" in page


def test_the_candidates_keep_the_issue_s_mix_heavy_tailed():
    """Every design compared keeps long tasks at least 25x the short ones; one is the experiment's (C), and the
    first is A (3% of the jobs long, of 2 s tasks)."""
    assert [name for name, mix in CANDIDATES if mix == Mix()] == ["C (the experiment's)"]
    assert CANDIDATES[0][1] == Mix(long_ms=2000.0, long_fraction=0.03, width=2)
    assert all(mix.long_ms >= 25 * mix.short_ms for _, mix in CANDIDATES)
    assert SeedFigures(0, 1, 0.6, 0.3, 2.0, 0.5, 3, 4).speedup == 4.0


def seeds(speedup, points_off, points_on, n=10):
    """n seeds alike: p50 off `speedup` x the on one, and the points within 10% off and on."""
    return [SeedFigures(i, 50, 0.7, 0.2, speedup, 1.0, points_off, points_on) for i in range(n)]


def test_the_choice_is_written_from_the_numbers():
    """A design that halves the short p50 in under 95% of its seeds, or whose long tasks are not 25x the short, or
    hold under 70% of the slot time, is not admissible; among the others the best conditioned (the worse of off and
    on) is chosen; with none admissible the page says so."""
    slow = seeds(3.0, 9, 9)
    slow[0] = slow[1] = SeedFigures(0, 50, 0.5, 0.5, 1.2, 1.0, 9, 9)  # 2 of 10 seeds not halved: 80%
    assert halved(slow) == 0.8 and not admissible(Mix(), slow) and admissible(Mix(), seeds(3.0, 9, 9))
    one_of_20 = seeds(3.0, 9, 9, n=20)
    one_of_20[0] = SeedFigures(0, 50, 0.5, 0.5, 1.99, 1.0, 9, 9)  # 1.99x is not a halving: 95% still are
    assert halved(one_of_20) == 0.95 and admissible(Mix(), one_of_20)
    one_of_20[1] = one_of_20[0]
    assert not admissible(Mix(), one_of_20)  # 90%
    assert not admissible(Mix(long_ms=400.0), seeds(3.0, 9, 9))  # 20x the short
    assert not admissible(Mix(long_ms=2000.0, long_fraction=0.01), seeds(3.0, 9, 9))  # 51% of the slot time
    results = [
        ("A", Mix(), slow),
        ("B", Mix(long_ms=2000.0, long_fraction=0.05), seeds(3.0, 12, 4)),
        ("C", Mix(), seeds(4.0, 6, 5)),
    ]
    assert verdict(results).endswith("B, C; chosen: C (5.0 points within 10% at p10).")
    assert verdict(results[:1]).endswith("none: no design compared keeps the halving robust.")
