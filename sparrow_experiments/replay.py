"""Replaying a run of the runtime on the simulator (`sparrow_core.sim`, the runtime's own kernels).

Two replays of the same trace (each job at the time it arrived, with the durations its tasks
measured in their workers, and the stages it waited for):
- the **ideal**: the `omniscient` policy, one infinitely fast central queue over the same slots,
  with no delay of any kind;
- the **model**: the `sparrow` policy (batch sampling, late binding, cancellation: what the runtime
  does; `sparrow_steal` for a run with work stealing, each idle worker taking up to its slots at once
  as a node monitor does) given the delays this very run measured (`measure_hops`), so that it
  predicts the run. A
  user can trust the simulator's answers for their cluster as far as the two agree.

The hops come from the run's own timestamps (every process of the host reads one clock,
`time.monotonic()`), in seconds, as means:
- `result`: from a job's last task's end in its worker to its last outcome at the client;
- `chain_gap`: on one worker, from a task's end to the start of the next task it ran when that task
  was already submitted (the slot was wanted): the executor's hops plus the late-binding round trip
  (node monitor -> scheduler -> node monitor). Gaps over CHAIN_LIMIT are idle time, not a chain;
- `idle_start`: from the submission of a task that found its worker idle to its start: the
  submission, the reservation, the GetTask round trip and the executor's hop.
The timestamps cannot tell the late-binding round trip from the executor's hops within a chain gap,
so the model charges the whole gap to the round trip: `network_delay` (one way, scheduler <-> node
monitor) = chain_gap / 2 and no `launch_overhead` (an empty GetTask then costs the model a little
more than the runtime); `submit_delay` = idle_start - 3 x network_delay (the submission and
whatever a job costs the scheduler before its reservations leave), `result_delay` = result.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from sparrow_core.sim import REPLAY_POLICIES, SimConfig, SimResult, simulate
from sparrow_runtime.demo.workload import JobRecord
from sparrow_runtime.services.steal_logic import STEAL_VICTIMS

CHAIN_LIMIT = 0.005  # seconds: a longer gap between two tasks of a worker is idle time
RUNTIME_PROBE_RATIO = 2.0  # the scheduler's default (scheduler_logic.DEFAULT_PROBE_RATIO)
# seconds between a model's steal attempt and the run's it replays, at most: matched attempts cluster within 1-3 ms
# of the run's, and a wider window matches more of the rest (docs/simulator.md, "Trace files"), still under one short
# task at the experiment's time scale (80 ms)
STEAL_TOLERANCE = 0.05
MODEL_SEEDS = 5  # the model is run with this many seeds and its jobs pooled: its own noise averages out


@dataclass(frozen=True)
class ReplayJob:
    """One job of a trace: its arrival (seconds from the run's start), its tasks' durations, the
    indexes of the earlier jobs it waits for (the stages before it in a query), and the workers its
    reservations went to in the run (None: the model draws them; placement.py)."""

    arrival: float
    durations: np.ndarray
    parents: tuple[int, ...] = ()
    probes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StealAttempt:
    """One steal attempt of a run to replay (SimConfig.steal_script): worker `thief` probed `victims` at `at`
    (seconds on the trace's clock; steal_replay.py)."""

    at: float
    thief: int
    victims: tuple[int, ...]


@dataclass(frozen=True)
class Hops:
    """What a run measured (module docstring), in seconds, and the simulator delays they give."""

    chain_gap: float
    idle_start: float
    result: float

    @property
    def network(self) -> float:
        return self.chain_gap / 2

    @property
    def submit(self) -> float:
        return max(0.0, self.idle_start - 3 * self.network)

    @property
    def outside_queue(self) -> float:
        """What the model adds to a task's queue wait (SimResult.task_wait) before it starts, from its
        job's submission: the submission, the reservation and the GetTask round trip."""
        return self.submit + 3 * self.network

    def sim_delays(self) -> SimDelays:
        """SimConfig's delay fields for the model."""
        return {"network_delay": self.network, "submit_delay": self.submit, "result_delay": self.result}


class SimDelays(TypedDict):
    """SimConfig's delay fields, in seconds."""

    network_delay: float
    submit_delay: float
    result_delay: float


def replay_jobs(records: Sequence[JobRecord]) -> list[ReplayJob]:
    """The demo's jobs as a trace: each at its submission, with its measured durations."""
    first = records[0].submitted
    return [ReplayJob(r.submitted - first, measured_durations(r)) for r in records]


def measured_durations(record: JobRecord) -> np.ndarray:
    """Each task's end - start in its worker (0 for a task that failed)."""
    return np.nan_to_num(record.ends - record.starts, nan=0.0).clip(min=0.0)


def measure_hops(records: Iterable[JobRecord]) -> Hops:
    """The run's hops (module docstring). Error handling: ValueError if the records name no worker
    (they come from before demo_task reported its worker) or hold too few tasks to measure."""
    records = list(records)
    if any(r.workers is None for r in records):
        raise ValueError("the records do not say which worker ran each task")
    ready = np.concatenate([np.full(r.n_tasks, r.submitted) for r in records])
    job = np.concatenate([np.full(r.n_tasks, j) for j, r in enumerate(records)])
    start = np.concatenate([r.starts for r in records])
    end = np.concatenate([r.ends for r in records])
    worker = np.concatenate([r.workers for r in records])
    ran = ~np.isnan(start) & ~np.isnan(end) & (worker >= 0)
    ready, job, start, end, worker = ready[ran], job[ran], start[ran], end[ran], worker[ran]
    order = np.lexsort((start, worker))
    ready, job, start, end, worker = ready[order], job[order], start[order], end[order], worker[order]
    same = worker[1:] == worker[:-1]  # pairs (i, i + 1) of consecutive tasks on one worker
    gap = start[1:] - end[:-1]
    chain = same & (ready[1:] < end[:-1]) & (gap >= 0) & (gap < CHAIN_LIMIT)
    # a task found its worker idle: the worker's first task, or its previous one ended before the
    # submission (and was of another job: the same job's would have been a chain)
    idle = np.ones(len(start), dtype=bool)
    idle[1:] = ~same | ((end[:-1] <= ready[1:]) & (job[:-1] != job[1:]))
    finished = np.array([r.finished for r in records])
    last_end = np.array([np.nanmax(r.ends) if np.any(~np.isnan(r.ends)) else math.nan for r in records])
    result = finished - last_end
    result = result[~np.isnan(result)]
    if not chain.any() or not idle.any() or not result.size:
        raise ValueError("too few tasks to measure the hops (a run needs tasks that queue and tasks that do not)")
    return Hops(
        chain_gap=float(np.mean(gap[chain])),
        idle_start=float(np.mean((start - ready)[idle])),
        result=float(np.mean(result)),
    )


def write_trace(jobs: Sequence[ReplayJob], path: str | os.PathLike[str], *, placed: bool = True) -> None:
    """A simulator trace (docs/simulator.md, "Trace files") of `jobs`; a job's parents by job number,
    its probes (if `placed` and it has them) as a replayed placement."""
    with open(path, "w") as f:
        for job in jobs:
            after = f" after={','.join(map(str, job.parents))}" if job.parents else ""
            probes = f" probes={','.join(map(str, job.probes))}" if placed and job.probes is not None else ""
            durations = " ".join(f"{x:.9f}" for x in job.durations.tolist())
            f.write(f"{job.arrival:.9f} {len(job.durations)} {durations}{after}{probes}\n")


def write_steal_script(attempts: Sequence[StealAttempt], path: str | os.PathLike[str]) -> None:
    """A simulator steal script (sparrow_core.sim.read_steal_script) of `attempts`, in time order."""
    with open(path, "w") as f:
        for a in attempts:
            f.write(f"{a.at:.9f} {a.thief} {','.join(map(str, a.victims))}\n")


def replay(
    jobs: Sequence[ReplayJob],
    *,
    policy: str,
    node_monitors: int,
    slots: int,
    schedulers: int = 1,
    hops: Hops | None = None,
    seeds: Iterable[int] = (0,),
    steal_wait: float = 0.0,
    steals: Sequence[StealAttempt] | None = None,
) -> list[SimResult]:
    """Simulate `jobs` on `node_monitors` x `slots` under `policy`, once per seed; with `hops`, with
    the delays they give, else with none; sparrow_steal's thieves wait `steal_wait` before probing,
    and with `steals` probe the victims of the run's attempts (steal_replay.py).
    Jobs' probes are replayed under a policy that batch-samples (REPLAY_POLICIES), else left out."""
    none: SimDelays = {"network_delay": 0.0, "submit_delay": 0.0, "result_delay": 0.0}
    delays = none if hops is None else hops.sim_delays()
    fd, path = tempfile.mkstemp(prefix="sparrow-replay-", suffix=".trace")
    os.close(fd)
    script = None
    try:
        write_trace(jobs, path, placed=policy in REPLAY_POLICIES)
        if steals is not None:
            fd, script = tempfile.mkstemp(prefix="sparrow-replay-", suffix=".steals")
            os.close(fd)
            write_steal_script(steals, script)
        return [
            simulate(
                SimConfig(
                    policy=policy,
                    n_workers=node_monitors,
                    slots=slots,
                    n_schedulers=schedulers,
                    probe_ratio=RUNTIME_PROBE_RATIO,
                    steal_max_take=slots,  # a node monitor takes up to its free slots (services/steal_logic.py)
                    steal_victims=STEAL_VICTIMS,  # and asks as many peers
                    steal_wait=steal_wait,
                    steal_script=script,
                    steal_script_tolerance=STEAL_TOLERANCE,
                    seed=seed,
                    trace=path,
                    **delays,
                )
            )
            for seed in seeds
        ]
    finally:
        os.unlink(path)
        if script is not None:
            os.unlink(script)


def ideal(jobs: Sequence[ReplayJob], *, node_monitors: int, slots: int) -> SimResult:
    """The omniscient replay with no delays (module docstring)."""
    return replay(jobs, policy="omniscient", node_monitors=node_monitors, slots=slots)[0]


def model(
    jobs: Sequence[ReplayJob],
    hops: Hops,
    *,
    node_monitors: int,
    slots: int,
    schedulers: int = 1,
    policy: str = "sparrow",
    seeds: int = MODEL_SEEDS,
    steal_wait: float = 0.0,
    steals: Sequence[StealAttempt] | None = None,
) -> list[SimResult]:
    """The `policy` replay (sparrow, or sparrow_steal for a run with work stealing) with the run's hops,
    `seeds` times (module docstring); `steals`: the run's steal attempts, replayed."""
    return replay(
        jobs,
        policy=policy,
        node_monitors=node_monitors,
        slots=slots,
        schedulers=schedulers,
        hops=hops,
        seeds=range(seeds),
        steal_wait=steal_wait,
        steals=steals,
    )
