"""Each job's own submission delay replayed (sparrow_experiments.submissions): a job's arrival moves by its delay's
excess over the mean, its response is put back on its own arrival, and a late submission changes which job
waits behind a long task, in the model as in the run."""

from __future__ import annotations

import numpy as np
import pytest

from sparrow_experiments.replay import ReplayJob, replay
from sparrow_experiments.submissions import dispatch_times, replay_submissions


def jobs(*arrivals: float, durations: tuple[float, ...] = ()) -> list[ReplayJob]:
    ds = durations or (0.01,) * len(arrivals)
    return [ReplayJob(a, np.array([d]), probes=(0,)) for a, d in zip(arrivals, ds, strict=True)]


def test_a_job_moves_by_its_delay_s_excess_over_the_mean() -> None:
    """Delays 1, 1 and 4 ms (mean 2): the first two arrive 1 ms earlier, the third 2 ms later; the trace starts
    at 0 (the first shift is negative) and the shifts are each job's own."""
    got = replay_submissions(jobs(0.0, 0.1, 0.2), submitted=[10.0, 10.1, 10.2], sent=[10.001, 10.101, 10.204])
    assert got.shift == pytest.approx([-0.001, -0.001, 0.002])
    assert [j.arrival for j in got.jobs] == pytest.approx([0.0, 0.1, 0.203])
    assert got.delay == pytest.approx([0.001, 0.001, 0.004]) and got.held == 0
    assert got.responses(np.array([0.5, 0.5, 0.5])) == pytest.approx([0.499, 0.499, 0.502])


def test_a_job_submitted_before_an_earlier_one_s_late_reservations_is_held_behind_them() -> None:
    """The first job's reservations left 10 ms late, the second's at once 1 ms after the first arrived: the trace
    cannot put it first (arrivals never decrease), so it is held to the first's moved arrival and counted."""
    got = replay_submissions(jobs(0.0, 0.001), submitted=[0.0, 0.001], sent=[0.010, 0.001])
    assert got.held == 1
    assert got.jobs[0].arrival == got.jobs[1].arrival
    assert got.shift == pytest.approx([0.005, 0.004])


def test_a_job_that_waits_for_others_keeps_its_arrival() -> None:
    """A later stage is released by its parents' ends, not its arrival: no shift, and its own delay (its
    parents' run) is not in the mean."""
    trace = [ReplayJob(0.0, np.array([0.01])), ReplayJob(0.0, np.array([0.01]), parents=(0,))]
    got = replay_submissions(trace, submitted=[0.0, 0.5], sent=[0.002, 0.6])
    assert got.shift == pytest.approx([0.0, 0.0])


def test_a_late_submission_changes_which_job_waits_behind_the_long_task() -> None:
    """Workers 0 and 1 are busy until 0.100 and 0.103 s. A long job (1 s, probes 1 then 0) arrives at 0.095 but its
    reservations left 9 ms late, when both were idle: it took worker 1, and a short job arriving at 0.1045 (probe
    0) ran at once. The model with one mean delay for all binds the long job to worker 0 at 0.100 and queues the
    short one behind it (a 1 s response); with each job's own delay it runs first, as in the run."""
    trace = [
        ReplayJob(0.0, np.array([0.1]), probes=(0,)),
        ReplayJob(0.0, np.array([0.103]), probes=(1,)),
        ReplayJob(0.095, np.array([1.0]), probes=(1, 0)),
        ReplayJob(0.1045, np.array([0.01]), probes=(0,)),
    ]
    (plain,) = replay(trace, policy="sparrow", node_monitors=2, slots=1)
    assert plain.job_response[3] == pytest.approx(1.1 + 0.01 - 0.1045)
    got = replay_submissions(trace, submitted=[0.0, 0.0, 0.095, 0.1045], sent=[0.0, 0.0, 0.104, 0.1045])
    (moved,) = replay(got.jobs, policy="sparrow", node_monitors=2, slots=1)
    mean = 0.009 / 4  # the model's submit_delay holds the mean: each job is moved by its excess over it
    expected = [0.1 - mean, 0.103 - mean, 1.0 + 0.009 - mean, 0.01 - mean]
    assert got.responses(moved.job_response) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("submitted", "sent", "match"),
    [([0.0], [0.0, 0.1], "2 jobs, 1 submission times and 2 send times"), ([0.0, 0.1], [0.0, np.nan], "finite")],
)
def test_times_that_do_not_fit_the_jobs_are_an_error(submitted, sent, match) -> None:
    with pytest.raises(ValueError, match=match):
        replay_submissions(jobs(0.0, 0.1), submitted=submitted, sent=sent)


def test_a_job_an_idle_node_monitor_asked_for_is_sent_when_that_gettask_came_less_the_model_s_two_hops() -> None:
    """Job 0's first idle GetTask came 6 ms after its send: its send time becomes that less the model's 1.4 ms round
    trip; job 1 no idle node monitor asked for keeps its logged send."""
    assert dispatch_times([1.0, 2.0], [1.006, np.nan], 0.0014) == pytest.approx([1.0046, 2.0])
    with pytest.raises(ValueError, match="2 send times and 1 first idle GetTasks"):
        dispatch_times([1.0, 2.0], [1.006], 0.0014)
    with pytest.raises(ValueError, match="round_trip"):
        dispatch_times([1.0], [1.006], -1.0)
