"""Each job's own submission and dispatch delays, replayed by the simulator (the steal experiment).

The model's jobs reach their scheduler one mean `submit_delay` after they arrive (replay.py), but in a
run a few submissions take far longer than the mean (docs/results/steal-experiment.md; whether the client
or the scheduler held them is not in the logs), and with 16
slots one job's reservations landing a few ms later than in the model can change which queue a long task
blocks, and with it every short job behind it (docs/paper/steal.md). The schedulers' placement logs time each
job's reservations as they leave (placement.py: `RunPlacement.sent`), on the clock of the client's
submission (JobRecord.submitted), so each job's delay from its submission to its reservations is known.

The same holds for the hops after the send: a job's reservations and the GetTasks they make can take several times
the model's two hops, and a task bound a few ms early in the model frees a node monitor before another and moves a
long task. Where a node monitor that was idle when the reservations left asked
for the job (placement.py: `RunPlacement.reached`, no queue in between), `dispatch_times` takes that GetTask, less
the model's two hops for it (`2 x network_delay`), as the job's send time, so that the model's first idle worker
asks when the run's did; a job no idle node monitor asked for keeps the logged send.

`replay_submissions` moves each job's arrival in the trace by its delay's excess over the run's mean (the
model's `submit_delay` already holds the mean), so that its reservations reach the model's workers when the
run's left the scheduler plus one network delay, and gives each job's shift: the model's response of a job is
its simulated response plus its shift (the response still runs from the job's own arrival). A trace's arrivals
may not decrease, so a job submitted before an earlier one's delayed reservations left is held back to that
one's (`ReplayedSubmissions.held`); a job that waits for others (a later stage of a query) is released by
their ends, not its arrival, and keeps its own. `ReplayedSubmissions.origin` is the run's time when the reservations
of a job arriving at the model's time 0 would have left the scheduler (the first job's submission, the mean delay
and the trace's start): a run's time t is the model's t - origin + submit_delay (steal_replay.py uses it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .replay import ReplayJob


@dataclass(frozen=True)
class ReplayedSubmissions:
    """The jobs with their arrivals moved (module docstring), each job's shift in seconds (add it to the model's
    response), how many jobs were held back to keep the arrivals in order, and each job's measured delay from its
    submission to its reservations leaving the scheduler (seconds)."""

    jobs: list[ReplayJob]
    shift: np.ndarray
    held: int
    delay: np.ndarray
    origin: float = 0.0  # the run's time when the reservations of a job arriving at the model's 0 left (seconds)

    def responses(self, simulated: np.ndarray) -> np.ndarray:
        """The model's responses of the run's jobs: `simulated` (one seed's, in job order) plus each one's shift."""
        return simulated + self.shift


def dispatch_times(sent: Sequence[float], reached: Sequence[float], round_trip: float) -> list[float]:
    """Per job, `reached` less `round_trip` (the model's reservation hop and GetTask hop) where a node monitor idle
    then asked for it (finite), else `sent` (module docstring). Error handling: ValueError if the two do not give one
    entry per job, or `round_trip` is not a finite number >= 0."""
    if len(sent) != len(reached):
        raise ValueError(f"{len(sent)} send times and {len(reached)} first idle GetTasks")
    if not (math.isfinite(round_trip) and round_trip >= 0):
        raise ValueError(f"round_trip must be a finite number >= 0, got {round_trip}")
    return [r - round_trip if math.isfinite(r) else s for s, r in zip(sent, reached, strict=True)]


def replay_submissions(
    jobs: Sequence[ReplayJob], submitted: Sequence[float], sent: Sequence[float]
) -> ReplayedSubmissions:
    """Each job's arrival moved by the excess of its delay (`sent` - `submitted`, both on one clock) over the
    mean delay of the jobs that wait for none (module docstring).

    Error handling: ValueError if the three do not give one entry per job, or a time is not finite."""
    if not len(jobs) == len(submitted) == len(sent):
        raise ValueError(f"{len(jobs)} jobs, {len(submitted)} submission times and {len(sent)} send times")
    delay = np.asarray(sent, dtype=float) - np.asarray(submitted, dtype=float)
    if not np.all(np.isfinite(delay)):
        raise ValueError("a job's submission or send time is not a finite number")
    arrival = np.array([job.arrival for job in jobs], dtype=float)
    root = np.array([not job.parents for job in jobs], dtype=bool)
    mean = float(delay[root].mean()) if root.any() else 0.0
    excess = np.where(root, delay - mean, 0.0)
    moved = np.maximum.accumulate(arrival + excess) if len(jobs) else arrival
    held = int(np.sum(moved > arrival + excess))
    start = min(float(moved[0]), 0.0) if len(jobs) else 0.0  # a trace starts at 0 or later
    out = [replace(job, arrival=float(a - start)) for job, a in zip(jobs, moved.tolist(), strict=True)]
    origin = (submitted[0] - arrival[0] + mean + start) if len(jobs) else 0.0
    return ReplayedSubmissions(out, moved - arrival, held, delay, float(origin))
