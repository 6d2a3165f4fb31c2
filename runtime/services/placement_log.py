"""The scheduler's placement log: which node monitors each job's reservations went to, for the simulator to
replay (`sparrow experiment steal` replays the runtime's own probes instead of drawing its own).

Off unless the environment names a folder, SPARROW_PLACEMENT_LOG=DIR (the experiment sets it for the local
cluster it starts): each scheduler then writes DIR/<scheduler id>.jsonl, one JSON object a line, first
{"scheduler": id}, then one {"job": job id, "nodes": [node monitor id, ...], "at": t} per
EnqueueReservations round (a node monitor listed once per reservation it got; a job probed again, after a
lost node monitor, has a line per round) and one {"answer": job id, "task": task or -1 (NoTask), "node":
node monitor id, "stolen": bool, "at": t} per GetTask it answered (a stolen one's also "origin": the node
monitor the reservation was placed at, whom the thief took it from) (`t`: time.monotonic(), the clock every
process of a host shares, as the experiment's task timestamps are). Lines are written as they come
(line-buffered: a killed scheduler loses at most the line being written), nothing is held in memory, and a
log stops at MAX_LINES (the last line then says how many lines were left out). Error handling: a folder
that cannot be written logs a warning and leaves the log off; a write that fails turns it off the same way:
the scheduler never stops for its log.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .line_log import LineLog, read_objects

ENVIRONMENT = "SPARROW_PLACEMENT_LOG"
MAX_LINES = 4_000_000  # lines per log (about 80 bytes each): a bound on the file, not on memory
logger = logging.getLogger(__name__)


def log_path(folder: str | os.PathLike[str], scheduler_id: str) -> Path:
    """The file of `scheduler_id`'s log in `folder` (characters outside [A-Za-z0-9._-] become _)."""
    return Path(folder) / f"{re.sub(r'[^A-Za-z0-9._-]', '_', scheduler_id)}.jsonl"


class PlacementLog(LineLog):
    """One scheduler's log (module docstring), appending to `path`."""

    def __init__(self, path: str | os.PathLike[str], scheduler_id: str, *, max_lines: int = MAX_LINES) -> None:
        super().__init__(path, {"scheduler": scheduler_id}, max_lines=max_lines)

    def record(self, job_id: int, node_ids: Iterable[str]) -> None:
        """One round of `job_id`'s reservations, on `node_ids` (one entry per reservation)."""
        self._line({"job": job_id, "nodes": list(node_ids), "at": time.monotonic()})

    def answer(self, job_id: int, task: int | None, node_id: str, stolen: bool, origin: str = "") -> None:
        """`node_id` asked for a task of `job_id` (for a stolen reservation, if `stolen`, placed at `origin`):
        `task` (None: NoTask)."""
        number = -1 if task is None else task
        if stolen:
            self._line(
                {
                    "answer": job_id,
                    "task": number,
                    "node": node_id,
                    "stolen": True,
                    "origin": origin,
                    "at": time.monotonic(),
                }
            )
        else:
            self._line({"answer": job_id, "task": number, "node": node_id, "stolen": False, "at": time.monotonic()})


def from_environment(scheduler_id: str) -> PlacementLog | None:
    """The log ENVIRONMENT asks for, or None (module docstring)."""
    folder = os.environ.get(ENVIRONMENT)
    if not folder:
        return None
    path = log_path(folder, scheduler_id)
    try:
        return PlacementLog(path, scheduler_id)
    except OSError as exc:
        logger.warning("%s=%s: cannot write %s (%s); no placement log", ENVIRONMENT, folder, path, exc)
        return None


@dataclass
class Answer:
    """One GetTask a scheduler answered (module docstring); task -1: NoTask."""

    job: int
    task: int
    node: str
    stolen: bool
    at: float
    origin: str = ""  # a stolen reservation's node monitor (the victim); "" for the asker's own


@dataclass
class PlacementRecords:
    """What one log holds: each job's first round of reservations and when it was sent, and the answers."""

    placements: dict[int, list[str]] = field(default_factory=dict)
    probed_at: dict[int, float] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)


def read_placements(path: str | os.PathLike[str]) -> dict[int, list[str]]:
    """A log's first round per job: job id -> the node monitor ids its reservations went to (read_log)."""
    return read_log(path).placements


def read_log(path: str | os.PathLike[str]) -> PlacementRecords:
    """Every line of a log (module docstring); a job's later rounds are left out.

    Error handling: ValueError naming the file and line for a line that is not one of the log's; a last line
    cut short (a scheduler killed mid-write) is left out."""
    out = PlacementRecords()
    for number, obj in read_objects(path, "placement log"):
        if "job" in obj:
            job, nodes = obj.get("job"), obj.get("nodes")
            if not isinstance(job, int) or not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
                raise ValueError(f"{path}:{number}: a job line needs an int job and a list of node ids")
            if job not in out.placements:
                out.placements[job] = nodes
                out.probed_at[job] = float(obj.get("at", math.nan))
        elif "answer" in obj:
            try:
                out.answers.append(
                    Answer(
                        int(obj["answer"]),
                        int(obj["task"]),
                        str(obj["node"]),
                        bool(obj["stolen"]),
                        float(obj["at"]),
                        str(obj.get("origin", "")),
                    )
                )
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{path}:{number}: an answer line needs answer, task, node, stolen and at") from None
        elif "scheduler" not in obj and "dropped" not in obj:
            raise ValueError(f"{path}:{number}: not a placement log line")
    return out
