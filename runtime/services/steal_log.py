"""A node monitor's steal log: each steal attempt it made, for the simulator to replay its victims
(`sparrow experiment steal` replays the runtime's own steal victims instead of drawing its own).

Off unless SPARROW_PLACEMENT_LOG=DIR names a folder (placement_log.py; the experiment sets it for the local
cluster it starts): each stealing node monitor then writes DIR/steals/<node id>.jsonl, first {"node": its id,
"address": its steal address (what its peers know it by)}, then one {"at": t, "victims": [steal address, ...],
"chose": address or "" (none worth it, no answer, nothing given), "took": reservations moved} per attempt (`t`: when its
probes left, time.monotonic(), the clock of the schedulers' logs). Bounded, line-buffered and never able to stop
the node monitor (line_log.py); a folder that cannot be written logs a warning and leaves the log off.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .line_log import LineLog, read_objects
from .placement_log import ENVIRONMENT, log_path

FOLDER = "steals"  # under the placement log's folder
MAX_LINES = 1_000_000  # attempts per log (about 100 bytes each): a bound on the file
logger = logging.getLogger(__name__)


class StealLog(LineLog):
    """One node monitor's log (module docstring), appending to `path`."""

    def __init__(self, path: str | os.PathLike[str], node_id: str, address: str, *, max_lines: int = MAX_LINES):
        super().__init__(path, {"node": node_id, "address": address}, max_lines=max_lines)

    def attempt(self, at: float, victims: Sequence[str], chose: str, took: int) -> None:
        """An attempt whose probes left at `at` (time.monotonic()) for `victims`; it took `took` reservations from
        `chose` ("": from none)."""
        self._line({"at": at, "victims": list(victims), "chose": chose, "took": took})


def from_environment(node_id: str, address: str) -> StealLog | None:
    """The log ENVIRONMENT asks for, or None (module docstring)."""
    folder = os.environ.get(ENVIRONMENT)
    if not folder:
        return None
    path = log_path(Path(folder) / FOLDER, node_id)
    try:
        path.parent.mkdir(exist_ok=True)
        return StealLog(path, node_id, address)
    except OSError as exc:
        logger.warning("%s=%s: cannot write %s (%s); no steal log", ENVIRONMENT, folder, path, exc)
        return None


@dataclass(frozen=True)
class Attempt:
    """One logged attempt (module docstring)."""

    at: float
    victims: tuple[str, ...]
    chose: str
    took: int


@dataclass
class StealRecords:
    """What one node monitor's log holds."""

    node: str
    address: str
    attempts: list[Attempt] = field(default_factory=list)


def read_steal_logs(folder: str | os.PathLike[str]) -> list[StealRecords]:
    """Every node monitor's log under `folder` (the placement log's folder), by file name; none: []."""
    return [read_steal_log(path) for path in sorted((Path(folder) / FOLDER).glob("*.jsonl"))]


def read_steal_log(path: str | os.PathLike[str]) -> StealRecords:
    """A log's lines (module docstring).

    Error handling: ValueError naming the file and line for a line that is not one of the log's (a header
    missing, an attempt without a finite time, a list of victims or a count); a last line cut short (a node
    monitor killed mid-write) is left out."""
    out: StealRecords | None = None
    for number, obj in read_objects(path, "steal log"):
        if out is None:
            if not isinstance(obj.get("node"), str) or not isinstance(obj.get("address"), str):
                raise ValueError(f"{path}:{number}: the first line must name the node and its address")
            out = StealRecords(obj["node"], obj["address"])
        elif "at" in obj:
            at, victims, chose, took = obj["at"], obj.get("victims"), obj.get("chose"), obj.get("took")
            if (
                not isinstance(at, (int, float))
                or not math.isfinite(at)
                or not isinstance(victims, list)
                or not all(isinstance(v, str) for v in victims)
                or not isinstance(chose, str)
                or not isinstance(took, int)
                or took < 0
            ):
                raise ValueError(f"{path}:{number}: an attempt needs a finite at, victims, chose and took >= 0")
            out.attempts.append(Attempt(float(at), tuple(victims), chose, took))
        elif "dropped" not in obj:
            raise ValueError(f"{path}:{number}: not a steal log line")
    if out is None:
        raise ValueError(f"{path}: empty, not a steal log")
    return out
