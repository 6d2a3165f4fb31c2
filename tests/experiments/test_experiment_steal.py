"""The work-stealing experiment's workload and verdicts (sparrow_experiments.steal): the mix is drawn from its seed
at the asked load, and the sentences are written from the numbers, whichever way they fall."""

import math
from dataclasses import replace

import numpy as np
import pytest

from sparrow_experiments.steal import (
    LONG_FRACTION,
    MODEL_SEEDS,
    WIDTH,
    Mix,
    StealRun,
    make_mixed,
    render,
    table,
    verdicts,
)


def test_the_mix_is_drawn_from_its_seed_at_the_asked_load():
    """200 s at load 0.85 on 16 slots: the same seed gives the same jobs, another seed others; about
    LONG_FRACTION of the jobs are long, every job has WIDTH tasks, and the offered load is near 0.85."""
    workload, long = make_mixed(load=0.85, seconds=200, slots=16, seed=1)
    again, long_again = make_mixed(load=0.85, seconds=200, slots=16, seed=1)
    other, _ = make_mixed(load=0.85, seconds=200, slots=16, seed=2)
    assert [q.arrival for q in workload.queries] == [q.arrival for q in again.queries]
    assert (long == long_again).all() and [q.arrival for q in other.queries] != [q.arrival for q in workload.queries]
    assert all(len(q.stages) == 1 and len(q.stages[0].durations) == WIDTH for q in workload.queries)
    assert abs(long.mean() - LONG_FRACTION) < 0.01
    assert [q.template for q in workload.queries] == ["long" if x else "short" for x in long]
    assert 0.7 < workload.offered_load < 1.0


@pytest.mark.parametrize("bad", [{"load": 1.0}, {"seconds": 0}, {"slots": 0}, {"time_scale": -1.0}])
def test_a_bad_argument_is_named(bad):
    kwargs = {"load": 0.85, "seconds": 10, "slots": 4, "seed": 0, **bad}
    with pytest.raises(ValueError, match=next(iter(bad))):
        make_mixed(**kwargs)


def run(steal, short_ms, simulated_ms, seed=0):
    """A run of 3 short jobs and 1 long one whose short jobs all took `short_ms` (the model: `simulated_ms`)."""
    long = np.array([False, False, False, True])
    response = np.where(long, 2.0, short_ms / 1e3)
    simulated = np.tile(np.where(long, 2.0, simulated_ms / 1e3), MODEL_SEEDS)
    return StealRun(steal, seed, long, response, simulated, response / 2, 0, 5 if steal else 0)


def test_verdicts_are_written_from_the_numbers():
    """Off 300 ms, on 100 ms: 3.00x, met; the model 9% and 5% off: met. Off 300, on 200: 1.50x, not met;
    the model 50% off: not met."""
    good = verdicts([run(False, 300, 327), run(True, 100, 95)])
    assert good == [
        "Short jobs' p50 response, stealing off / on, same arrivals: 3.00x (target >= 2x: met).",
        "Simulator against each run at the short jobs' p50, replaying the run's probe placement in 0 of 2 runs "
        "(the others drawn): worst 9% off (target within 10%: met); the mean of the signed errors +2%; per run "
        "+9%, -5%.",
        "Short jobs slower than 0.5 s (behind a long task), run / simulated: 0.0% / 0.0%, 0.0% / 0.0%; worst "
        "difference 0.0 points.",
        "The same error in points: the model's short p50 is the run's p100.0, p0.0 (worst 50.0 points from the "
        "median); there the run's p50 moves 0.0, 0.0 ms per point ((p55 - p45) / 10), so that 10% of it is -, - "
        "points.",
        f"Runs within the model's own spread (p10-p90 of its {MODEL_SEEDS} seeds' short p50): 0 of 0 (not counted: "
        "2 whose model has no spread, its seed drawing nothing).",
    ]
    bad = verdicts([run(False, 300, 300), run(True, 200, 300)])
    assert "1.50x (target >= 2x: not met)" in bad[0] and "worst 50% off" in bad[1] and "not met" in bad[1]
    assert "| 0 | on | 200.0 | 300.0 (drawn) | 1.50 | p100.0 | 0.0 | 300.0-300.0 | - | - | - |" in table(
        [run(True, 200, 300)]
    )


def test_a_replayed_placement_is_the_prediction_and_the_drawn_one_is_shown_beside_it():
    """A run whose model replayed its placement (300 ms, the run's figure) and drew it (450 ms): the verdict
    judges the replay (0% off: met) and quotes the drawn model (+50%) beside it; the table shows both."""
    placed = replace(run(False, 300, 300), placed=True, drawn=run(False, 300, 450).simulated)
    lines = verdicts([placed])
    assert lines[0].startswith("Simulator against each run at the short jobs' p50, replaying each run's own probe")
    assert "worst 0% off (target within 10%: met)" in lines[0]
    assert lines[1] == "The same model drawing its own placement instead: worst 50% off, mean +50%; per run +50%."
    assert "| 0 | off | 300.0 | 300.0 | 1.00 | p50.0 | 0.0 | 300.0-300.0 | 450.0 | 1.50 | 450.0-450.0 |" in table(
        [placed]
    )


def test_the_models_spread_is_taken_over_its_seeds():
    """Seed i of the model gives the short jobs i x 10 ms: its p10-p90 over the seeds brackets a run at the
    middle and not one past the last seed; the pooled p50 is over every seed's jobs together; a model whose seeds all
    agree is left out of the count."""
    long = np.array([False, False, True])
    per_seed = [np.array([(i + 1) / 100, (i + 1) / 100, 5.0]) for i in range(MODEL_SEEDS)]
    simulated = np.concatenate(per_seed)
    middle = StealRun(True, 0, long, np.array([0.1, 0.1, 5.0]), simulated, simulated[:3], 0, 0)
    past = StealRun(True, 0, long, np.array([1.0, 1.0, 5.0]), simulated, simulated[:3], 0, 0)
    lo, hi = middle.model_range()
    assert lo == pytest.approx(np.percentile(np.arange(1, MODEL_SEEDS + 1) / 100, 10))
    assert hi == pytest.approx(np.percentile(np.arange(1, MODEL_SEEDS + 1) / 100, 90))
    assert middle.within_model_range() and not past.within_model_range()
    assert middle.p(50, simulated=True) == pytest.approx(np.median(simulated[~np.tile(long, MODEL_SEEDS)]))
    assert (
        "Runs within the model's own spread" in verdicts([middle, past])[-2]
        and "1 of 2" in verdicts([middle, past])[-2]
    )
    fixed = StealRun(
        False, 0, long, np.array([0.1, 0.1, 5.0]), np.tile(simulated[:3], MODEL_SEEDS), simulated[:3], 0, 0
    )
    assert verdicts([middle, fixed])[-2].endswith(
        "1 of 1 (not counted: 1 whose model has no spread, its seed drawing nothing)."
    )  # stealing off with a replayed placement: every seed gives the same p50
    assert fixed.seeds_within_target() == 1.0


def test_the_share_of_the_model_s_seeds_within_the_target_of_its_pooled_p50():
    """Seeds whose short p50 is 100 ms (16 of them) and 200 ms (4): the pooled p50 is 100 ms, and 16 of 20 seeds are
    within 10% of it; the verdict names each run whose seed draws something."""
    long = np.array([False, False, True])
    per_seed = [np.array([0.1 if i < 16 else 0.2] * 2 + [5.0]) for i in range(MODEL_SEEDS)]
    on = StealRun(True, 1, long, np.array([0.1, 0.1, 5.0]), np.concatenate(per_seed), per_seed[0], 0, 0)
    assert on.seeds_within_target() == pytest.approx(16 / MODEL_SEEDS)
    assert verdicts([on])[-1].endswith("the model being right): seed 1 on 80%.")


def test_the_blocked_fraction_counts_short_jobs_behind_a_long_task():
    """Short jobs of 0.1, 0.2, 0.9 and 3 s as run (half over BLOCKED) and all 0.1 s in the model (none): the
    fractions are 50% and 0%, and the long job is not counted; the verdict quotes the difference."""
    long = np.array([False, False, False, False, True])
    response = np.array([0.1, 0.2, 0.9, 3.0, 9.0])
    simulated = np.tile(np.array([0.1, 0.1, 0.1, 0.1, 9.0]), MODEL_SEEDS)
    r = StealRun(False, 0, long, response, simulated, response, 0, 0)
    assert r.blocked() == 0.5 and r.blocked(simulated=True) == 0.0
    assert "50.0% / 0.0%; worst difference 50.0 points." in " ".join(verdicts([r]))


def test_the_error_in_points_and_the_slope_show_how_ill_conditioned_the_median_is():
    """Short jobs: 100 of 100-199 ms and 100 of 1-1.99 s (the blocked), 1 ms and 10 ms apart. The median is the
    step between the two: (p55 - p45) / 10 spans it (about 90 ms a point), and a model 10 short jobs more blocked
    has its p50 (1.10 s against 0.60 s: +83%) at the run's p55.0 (5 points off); a model of the same jobs: p50.0."""
    short = np.concatenate([np.arange(100, 200) / 1e3, np.arange(100, 200) / 1e2])
    long = np.r_[np.zeros(200, dtype=bool), True]
    response = np.r_[short, 9.0]
    more_blocked = np.r_[short[:90], short[100:110] * 10 + 0.9, short[100:], 9.0]
    worse = StealRun(False, 0, long, response, np.tile(more_blocked, MODEL_SEEDS), response, 0, 0)
    same = StealRun(False, 0, long, response, np.tile(response, MODEL_SEEDS), response, 0, 0)
    assert worse.p50_slope() == pytest.approx((np.percentile(short, 55) - np.percentile(short, 45)) / 10)
    assert 0.085 < worse.p50_slope() < 0.095
    assert worse.model_rank() == pytest.approx(55.0) and same.model_rank() == pytest.approx(50.0)
    line = next(x for x in verdicts([worse, same]) if x.startswith("The same error in points"))
    assert "the run's p55.0, p50.0 (worst 5.0 points from the median)" in line
    assert f"so that 10% of it is {0.1 * worse.p(50) / worse.p50_slope():.1f}" in line
    assert "| p55.0 |" in table([worse]) and "| p50.0 |" in table([same])


def test_the_agreement_counts_the_run_s_own_short_jobs_blocked_in_the_model():
    """Run: short jobs 0.1, 0.9, 0.2, 3 s (the 2nd and 4th blocked). A model blocking the 1st and 2nd instead has
    as many blocked (50% / 50%) but agrees on 2 of 4 jobs; one blocking the same jobs agrees on all; a drawn
    placement (jobs not the run's own) gives no agreement."""
    long = np.array([False, False, False, False, True])
    response = np.array([0.1, 0.9, 0.2, 3.0, 9.0])
    swapped = np.tile(np.array([0.9, 0.9, 0.1, 0.1, 9.0]), MODEL_SEEDS)
    r = StealRun(False, 0, long, response, swapped, response, 0, 0, placed=True)
    assert r.blocked() == r.blocked(simulated=True) == 0.5 and r.agreement() == 0.5
    same = StealRun(False, 0, long, response, np.tile(response, MODEL_SEEDS), response, 0, 0, placed=True)
    assert same.agreement() == 1.0
    assert math.isnan(replace(same, placed=False).agreement())
    assert (
        "(job by job, replayed placement; with stealing on, replayed steal victims where the logs have them): 50.0%, "
        "100.0%." in " ".join(verdicts([r, same]))
    )


def test_the_page_describes_the_mix_it_ran():
    """The experiment's mix by default; another when asked (the long jobs' share of the slot time from it)."""
    runs = [run(False, 300, 300), run(True, 100, 100)]
    page = render(runs, command="c", setup="s", notes=["n"])
    assert (
        "Jobs of 2 tasks; 12% of them long (500 ms tasks), the others short (20 ms tasks); the long jobs hold "
        "about 77% of the slot time." in page
    )
    page = render(runs, command="c", setup="s", notes=["n"], mix=Mix(long_ms=2000.0, long_fraction=0.03, width=4))
    assert (
        "Jobs of 4 tasks; 3% of them long (2000 ms tasks), the others short (20 ms tasks); the long jobs hold "
        "about 76% of the slot time." in page
    )


def test_the_page_gives_each_run_s_replayed_submission_delays():
    """A run whose jobs' submission delays were replayed gets their p50, p99 and longest, and the jobs held back;
    one without them says so; a page with none leaves the section out."""
    replayed = replace(run(False, 300, 300), submission_delay=np.array([0.0005] * 99 + [0.0070]), held=2)
    page = render([replayed, run(True, 100, 100)], command="c", setup="s", notes=["n"])
    assert "- seed 0 off: p50 0.5 ms, p99 0.6 ms, longest 7.0 ms; 2 job(s) held behind an earlier one's" in page
    assert "- seed 0 on: not replayed (the placement logs did not time every job)" in page
    assert "submission at the client to its reservations" not in render(
        [run(False, 300, 300)], command="c", setup="s", notes=["n"]
    )
