"""simulate(config): validate, load the trace if any, run the compiled simulator."""

from __future__ import annotations

import time

from .. import _core
from ._config import SimConfig
from ._result import SimResult
from ._steal_script import read_steal_script
from ._trace import read_trace

REPLAY_POLICIES = ("batch", "sparrow", "sparrow_steal", "sparrow_pipelined", "sparrow_steal_pipelined")
"""The policies that batch-sample their probes: a trace's `probes=` (a replayed placement) replaces their draw."""


def simulate(config: SimConfig | None = None) -> SimResult:
    """Runs one simulation (the GIL is released while it runs); the same config, seed
    included, gives the same result.

    Error handling: an invalid configuration raises ValueError (TypeError for a wrong type)
    that names the field; a malformed trace line, or a constraint naming a worker beyond
    n_workers or leaving a task nowhere to run, or a probes= worker beyond n_workers, raises
    ValueError with its line number; a trace with probes= under a policy that does not batch-sample
    (REPLAY_POLICIES) raises ValueError; so does a malformed steal script, naming its line or attempt.
    """
    config = SimConfig() if config is None else config
    if not isinstance(config, SimConfig):
        raise TypeError(f"config must be a SimConfig, got {type(config).__name__}")
    config.validate()
    trace = None if config.trace is None else read_trace(config.trace)
    if trace is not None and trace.probes is not None and config.policy not in REPLAY_POLICIES:
        raise ValueError(
            f"{config.trace}: the trace replays a placement (probes=), which policy {config.policy!r} does not "
            f"sample: use one of {', '.join(REPLAY_POLICIES)}"
        )
    steals = None if config.steal_script is None else read_steal_script(config.steal_script).arrays()
    started = time.perf_counter()
    raw = _core._simulate(config.params(), None if trace is None else trace.arrays(), steals)
    wall = time.perf_counter() - started
    counters = dict(raw["counters"])
    counters["tasks"] = int(trace.n_tasks.sum()) if trace is not None else config.n_jobs * config.tasks_per_job
    return SimResult(
        config=config,
        job_arrival=raw["job_arrival"],
        job_response=raw["job_response"],
        job_ideal=raw["job_ideal"],
        job_wait=raw["job_wait"],
        job_user=raw["job_user"],
        job_priority=raw["job_priority"],
        task_wait=raw["task_wait"],
        counters=counters,
        end_time=float(raw["end_time"]),
        wall_time=wall,
    )
