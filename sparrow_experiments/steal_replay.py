"""A run's own steal attempts, for the simulator to replay (with stealing on, the model's thieves probe the
victims the run's did, instead of drawing their own).

The node monitors log each attempt when SPARROW_PLACEMENT_LOG is set (services/steal_log.py: when its probes left,
by the clock of the schedulers' logs, and the steal addresses it probed); `run_steals` reads every node monitor's
log in the placement logs' folder and names thief and victims as simulator workers (node monitor i of `node_ids` is
worker i, as in placement.py), in time order. `on_model_clock` moves the attempts onto the model's clock: the run's
time of a job's reservations leaving its scheduler is, in the model, its arrival plus its submit_delay
(submissions.py's `ReplayedSubmissions.origin`), and a model's thief sends its probes `steal_wait` after it became
idle where the run's left `wake` after (steal_timing.py), so each attempt moves by the difference too. The model
(replay.py) then probes, at each of its thieves' attempts, the victims of that thief's first unused attempt
within STEAL_TOLERANCE of it (SimConfig.steal_script), and draws where there is none.

Error handling: ValueError for a log line that is not one, or a node monitor or steal address not in the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sparrow_runtime.services.steal_log import read_steal_logs

from .replay import StealAttempt


def run_steals(folder: Path, node_ids: Sequence[str]) -> list[StealAttempt]:
    """Every attempt the node monitors logged in `folder`, on the run's clock, in time order ([]: none logged)."""
    worker = {node: i for i, node in enumerate(node_ids)}
    logs = read_steal_logs(folder)
    by_address = {}
    for log in logs:
        if log.node not in worker:
            raise ValueError(f"a steal log names node monitor {log.node!r}, not one of the cluster's")
        by_address[log.address] = worker[log.node]
    out = []
    for log in logs:
        for a in log.attempts:
            unknown = [v for v in a.victims if v not in by_address]
            if unknown:
                raise ValueError(f"{log.node}'s steal log names {unknown[0]!r}, the steal address of no node monitor")
            if a.victims:  # an attempt with no peer to ask probed nobody
                out.append(StealAttempt(a.at, worker[log.node], tuple(by_address[v] for v in a.victims)))
    out.sort(key=lambda a: a.at)
    return out


def on_model_clock(attempts: Sequence[StealAttempt], origin: float, lag: float) -> list[StealAttempt]:
    """The attempts with each time t made t - origin + lag (module docstring: `origin` is the run's time of the
    model's time 0, `lag` what the model's thieves take longer than the run's to send their probes)."""
    return [replace(a, at=a.at - origin + lag) for a in attempts]
