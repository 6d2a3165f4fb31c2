"""A run's own probe placement and late-binding round trip, for the simulator to replay.

With stealing off, which queues the few long tasks block decides the short jobs' p50, so a model drawing its
own probes lands 20-40% either side of the same run by its seed alone. `placement_logs()` makes the
schedulers a LocalCluster starts inside it log each job's probed node monitors
(services/placement_log.py); `run_placement` reads the logs back as, per job of the run's trace
(report.replay_trace's order), the simulator workers (node monitor i of `node_ids` is worker i) its
reservations went to: what the trace's `probes=` field replays.

Each job's probes are listed in the order its node monitors first asked for one of its tasks (their first
GetTask answered for it, stolen ones left out), then those that never asked, in the order they were sent.
The order is the run's tie-break: the simulator binds a job's tasks to the first-listed of its probed workers
that are idle at once (the reservations reach them at the same instant, and so do their GetTasks), whereas in
the run it is whichever node monitor's thread asks first, uniform over the probes on this host. In the
scheduler's send order, the model's tie-break is one arbitrary draw of that chance; in the run's answer order it is
the run's own (docs/simulator.md, "Trace files", and docs/paper/steal.md have the figures).

The logs also time every GetTask answer, so the gap a slot spends between two tasks (the previous task's
end in its worker, the node monitor's GetTask, the scheduler's answer, the next task's start in its worker:
replay.py's `chain_gap`) is measured on the pairs where it is that round trip and nothing else,
instead of inferred from every gap under CHAIN_LIMIT (which leaves out the long ones a loaded host makes):
on one node monitor, the task bound right after the previous one ended, for a reservation the scheduler
had sent there before that end (it was waiting), with no NoTask answered there in between (an empty
GetTask, which the model counts itself) and not stolen (a stolen reservation arrived later, which the
model's steal timing counts). Measured for one slot per node monitor only (with more, which task freed
the slot is not in the logs).

The logs also time the round trip alone, without the executor's hops a chain gap has: a NoTask answered to a
node monitor of one slot, then its next GetTask, for a reservation it already held (sent before the NoTask),
not stolen: the NoTask's way back and the next GetTask's way out (`empty_round_trips`). It is printed beside
the gap, for the model whose `network_delay` is now half the gap (an empty GetTask costs it the whole gap).

The logs also time when each job's reservations left its scheduler (`sent`), and when the first of its node
monitors that was idle then asked for it (`reached`: nothing answered there in between, its last task ended:
the reservation's hop and the GetTask's, with no queue), for the model to replay each job's own delays
(submissions.py).

With stealing on, the folder also holds the node monitors' steal logs: `RunPlacement.steals` is every attempt
(steal_replay.py), for the model's thieves to probe the run's victims.

Error handling: a job missing from the logs (a log stopped at its bound, or was cut short) gives None: the
caller draws the placement instead and says so.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sparrow_runtime.demo.workload import JobRecord
from sparrow_runtime.services.placement_log import ENVIRONMENT, Answer, PlacementRecords, log_path, read_log

from .replay import StealAttempt
from .run import QueryRecord
from .steal_replay import run_steals

MIN_PAIRS = 20  # chained pairs below which the round trip is not measured (NaN: the caller infers it)


@dataclass(frozen=True)
class RunPlacement:
    """Per job of the trace, its probed workers (in the order they asked: module docstring); the mean late-binding
    gap over `pairs` chained pairs (NaN if not measured)."""

    probes: list[tuple[int, ...]]
    chain_gap: float
    pairs: int
    round_trip: float = math.nan  # the mean empty round trip (module docstring; NaN below MIN_PAIRS of them)
    round_trips: int = 0
    sent: list[float] = field(default_factory=list)  # per job, when its reservations left its scheduler
    reached: list[float] = field(default_factory=list)  # per job, its first GetTask from a node monitor idle then
    steals: list[StealAttempt] = field(default_factory=list)  # the node monitors' steal attempts, on the run's clock


@contextmanager
def placement_logs() -> Iterator[Path]:
    """While open, schedulers started from here log their placements in the folder yielded (removed after)."""
    before = os.environ.get(ENVIRONMENT)
    with tempfile.TemporaryDirectory(prefix="sparrow-placement-") as folder:
        os.environ[ENVIRONMENT] = folder
        try:
            yield Path(folder)
        finally:
            if before is None:
                os.environ.pop(ENVIRONMENT, None)
            else:
                os.environ[ENVIRONMENT] = before


def run_placement(
    records: Sequence[QueryRecord],
    folder: Path,
    scheduler_ids: Sequence[str],
    node_ids: Sequence[str],
    *,
    slots: int = 1,
) -> RunPlacement | None:
    """Each stage's probed workers in trace order and the measured round trip (module docstring), or None if a
    job is not in the logs.

    Error handling: ValueError for a log line that is not one, or a node monitor id (or steal address) not in
    `node_ids`."""
    logs = [
        read_log(log_path(folder, name)) if log_path(folder, name).exists() else PlacementRecords()
        for name in scheduler_ids
    ]
    worker = {node: i for i, node in enumerate(node_ids)}
    asked = [first_asked(log) for log in logs]
    stages: dict[tuple[int, int], JobRecord] = {}  # (scheduler, job id) -> the stage's record
    out: list[tuple[int, ...]] = []
    sent: list[float] = []
    keys: list[tuple[int, int]] = []  # (scheduler, job id) per job, in trace order
    for record in records:
        placements = logs[record.scheduler].placements
        if len(record.job_ids) != len(record.stages):  # a record made without its handles
            return None
        for job_id, stage in zip(record.job_ids, record.stages, strict=True):
            nodes = None if job_id is None else placements.get(job_id)
            if nodes is None or job_id is None:
                return None
            unknown = [n for n in nodes if n not in worker]
            if unknown:
                raise ValueError(
                    f"job {job_id}'s placement names node monitor {unknown[0]!r}, not one of the cluster's"
                )
            first = asked[record.scheduler]
            in_order = sorted(nodes, key=lambda n: first.get((job_id, n), math.inf))  # stable: unasked as sent
            out.append(tuple(worker[n] for n in in_order))
            sent.append(logs[record.scheduler].probed_at[job_id])
            keys.append((record.scheduler, job_id))
            if stage is not None:
                stages[record.scheduler, job_id] = stage
    gaps = chain_gaps(logs, stages) if slots == 1 else np.array([])
    trips = empty_round_trips(logs) if slots == 1 else np.array([])
    idle = first_idle_answers(logs, stages) if slots == 1 else {}
    reached = [idle.get(key, math.nan) for key in keys]
    steals = run_steals(folder, node_ids)
    return RunPlacement(out, _mean(gaps), int(gaps.size), _mean(trips), int(trips.size), sent, reached, steals)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if values.size >= MIN_PAIRS else math.nan


def empty_round_trips(logs: Sequence[PlacementRecords]) -> np.ndarray:
    """The round trips from a NoTask to the same node monitor's next GetTask for a reservation it already held
    (module docstring), over every node monitor of one slot, in seconds."""
    answers = sorted(((a, s) for s, log in enumerate(logs) for a in log.answers), key=lambda x: x[0].at)
    empty: dict[str, float] = {}  # node monitor -> when it got the NoTask not yet followed by a GetTask
    trips = []
    for a, s in answers:
        before = empty.pop(a.node, None)
        if before is not None and not a.stolen and logs[s].probed_at.get(a.job, math.inf) < before:
            trips.append(a.at - before)
        if a.task < 0 and not a.stolen:
            empty[a.node] = a.at
    return np.array(trips)


def first_idle_answers(
    logs: Sequence[PlacementRecords], stages: dict[tuple[int, int], JobRecord]
) -> dict[tuple[int, int], float]:
    """(scheduler, job id) -> when the first of its node monitors that was idle when its reservations were sent
    asked for it (module docstring): nothing answered there between the send and that GetTask, and every task
    answered there before the send had ended by then (a task of a job not in `stages`, the warm-up's, counts
    as ended). Jobs no idle node monitor asked for are left out. One slot per node monitor only."""
    by_node: dict[str, list[tuple[Answer, int]]] = {}
    for s, log in enumerate(logs):
        for a in log.answers:
            by_node.setdefault(a.node, []).append((a, s))
    first: dict[tuple[int, int], float] = {}
    for answers in by_node.values():
        answers.sort(key=lambda x: x[0].at)
        last_end = -math.inf  # the end of the last task answered here so far
        previous_at = -math.inf  # the last answer here so far
        for a, s in answers:
            sent = logs[s].probed_at.get(a.job, math.nan)
            if not a.stolen and previous_at < sent <= a.at and last_end < sent:
                key = (s, a.job)
                first[key] = min(first.get(key, math.inf), a.at)
            previous_at = a.at
            stage = stages.get((s, a.job))
            if a.task >= 0 and stage is not None:
                last_end = float(stage.ends[a.task])
    return first


def first_asked(log: PlacementRecords) -> dict[tuple[int, str], float]:
    """(job id, node monitor id) -> when that node monitor's first GetTask for the job was answered, for its own
    reservations (a stolen one's is left out: the thief asks for another node monitor's)."""
    first: dict[tuple[int, str], float] = {}
    for a in log.answers:
        if not a.stolen:
            first.setdefault((a.job, a.node), a.at)
    return first


def chain_gaps(logs: Sequence[PlacementRecords], stages: dict[tuple[int, int], JobRecord]) -> np.ndarray:
    """The gaps of the chained pairs (module docstring) over every node monitor of one slot, in seconds."""
    answers = sorted(
        ((a, s) for s, log in enumerate(logs) for a in log.answers if a.task < 0 or (s, a.job) in stages),
        key=lambda x: x[0].at,
    )
    last: dict[str, tuple[Answer, int]] = {}  # node monitor -> its last task's answer and scheduler
    empty: dict[str, float] = {}  # node monitor -> when it last got NoTask
    gaps = []
    for a, s in answers:
        if a.task < 0:
            empty[a.node] = a.at
            continue
        before = last.get(a.node)
        last[a.node] = (a, s)
        if before is None or a.stolen:
            continue
        prev, prev_s = before
        prev_end = float(stages[prev_s, prev.job].ends[prev.task])
        start = float(stages[s, a.job].starts[a.task])
        waiting = logs[s].probed_at.get(a.job, math.inf) < prev_end  # its reservation was sent before that end
        if waiting and prev_end < a.at and empty.get(a.node, -math.inf) < prev_end and start >= prev_end:
            gaps.append(start - prev_end)
    return np.array(gaps)
