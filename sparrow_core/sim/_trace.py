"""Reading a workload trace: one job per line, `arrival_time n_tasks duration...`.

A line gives either one duration (shared by all the job's tasks) or one per task. Blank lines
and `#` comments are skipped; arrival times must not decrease.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Trace:
    """Jobs in arrival order: job j has n_tasks[j] tasks, durations flat in job order."""

    arrival: npt.NDArray[np.float64]
    n_tasks: npt.NDArray[np.int64]
    durations: npt.NDArray[np.float64]


def _number(text: str, what: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: {what} must be a finite number >= 0, got {text!r}")
    return value


def read_trace(path: str | PathLike[str]) -> Trace:
    """Parses the trace file at `path`.

    Error handling: a malformed line raises ValueError naming the file and line number; a
    missing file raises FileNotFoundError.
    """
    arrival: list[float] = []
    n_tasks: list[int] = []
    durations: list[float] = []
    with open(path, encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, start=1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            where = f"{path}:{lineno}"
            if len(fields) < 3:
                raise ValueError(f"{where}: expected `arrival_time n_tasks duration...`, got {line.strip()!r}")
            time = _number(fields[0], "arrival_time", where)
            if arrival and time < arrival[-1]:
                raise ValueError(f"{where}: arrival_time {time} is earlier than the previous job's {arrival[-1]}")
            try:
                m = int(fields[1])
            except ValueError:
                raise ValueError(f"{where}: n_tasks must be an integer, got {fields[1]!r}") from None
            if m < 1:
                raise ValueError(f"{where}: n_tasks must be >= 1, got {m}")
            given = [_number(text, "duration", where) for text in fields[2:]]
            if len(given) not in (1, m):
                raise ValueError(f"{where}: expected 1 or {m} durations (n_tasks = {m}), got {len(given)}")
            arrival.append(time)
            n_tasks.append(m)
            durations.extend(given * m if len(given) == 1 else given)
    if not arrival:
        raise ValueError(f"{path}: the trace holds no job")
    return Trace(
        np.asarray(arrival, dtype=np.float64),
        np.asarray(n_tasks, dtype=np.int64),
        np.asarray(durations, dtype=np.float64),
    )
