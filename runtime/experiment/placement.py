"""A run's own probe placement, for the simulator to replay (issue 18).

With stealing off, which queues the few long tasks block decides the short jobs' p50, so a model drawing its
own probes lands 20-40% either side of the same run by its seed alone. `placement_logs()` makes the
schedulers a LocalCluster starts inside it log each job's probed node monitors
(services/placement_log.py); `run_placement` reads the logs back as, per job of the run's trace
(report.replay_trace's order), the simulator workers (node monitor i of `node_ids` is worker i) its
reservations went to: what the trace's `probes=` field replays. Error handling: a job missing from the logs
(a log stopped at its bound, or was cut short) gives None: the caller draws the placement instead and says so.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..services.placement_log import ENVIRONMENT, log_path, read_placements
from .run import QueryRecord


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
    records: Sequence[QueryRecord], folder: Path, scheduler_ids: Sequence[str], node_ids: Sequence[str]
) -> list[tuple[int, ...]] | None:
    """Each stage's probed workers in trace order (module docstring), or None if one is not in the logs.

    Error handling: ValueError for a log line that is not one, or a node monitor id not in `node_ids`."""
    logs: dict[int, dict[int, list[str]]] = {}
    worker = {node: i for i, node in enumerate(node_ids)}
    out: list[tuple[int, ...]] = []
    for record in records:
        if record.scheduler not in logs:
            path = log_path(folder, scheduler_ids[record.scheduler])
            logs[record.scheduler] = read_placements(path) if path.exists() else {}
        placements = logs[record.scheduler]
        if len(record.job_ids) != len(record.stages):  # a record made without its handles
            return None
        for job_id in record.job_ids:
            nodes = None if job_id is None else placements.get(job_id)
            if nodes is None:
                return None
            unknown = [n for n in nodes if n not in worker]
            if unknown:
                raise ValueError(
                    f"job {job_id}'s placement names node monitor {unknown[0]!r}, not one of the cluster's"
                )
            out.append(tuple(worker[n] for n in nodes))
    return out
