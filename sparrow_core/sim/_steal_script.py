"""Reading a steal script: a run's own work-stealing attempts, for sparrow_steal to replay (SimConfig.steal_script).

One attempt per line, in time order: `time thief victim,victim,...` (seconds on the trace's clock, the worker that
attempted, the workers it probed). Blank lines and `#` comments are skipped. The compiled core checks the rest (a
worker beyond n_workers, times that decrease, a victim listed twice or the thief itself) and names the attempt,
counting attempt lines from 0 (policy/steal_script.h has the matching of a thief's attempts to the script's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike

import numpy as np
import numpy.typing as npt

from ._trace import token_lines


@dataclass(frozen=True)
class StealScript:
    """Attempt i: worker thief[i] at at[i] probed victims[victim_offsets[i]:victim_offsets[i + 1]]."""

    at: npt.NDArray[np.float64]
    thief: npt.NDArray[np.int64]
    victims: npt.NDArray[np.int64]
    victim_offsets: npt.NDArray[np.int64]

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays the compiled core takes, by name."""
        return {"at": self.at, "thief": self.thief, "victims": self.victims, "victim_offsets": self.victim_offsets}


def read_steal_script(path: str | PathLike[str]) -> StealScript:
    """Parses the steal script at `path`.

    Error handling: a malformed line raises ValueError naming the file and line number; a missing file raises
    FileNotFoundError.
    """
    at: list[float] = []
    thief: list[int] = []
    victims: list[int] = []
    offsets = [0]
    for lineno, line, tokens in token_lines(path):
        where = f"{path}:{lineno}"
        if len(tokens) != 3:
            raise ValueError(f"{where}: expected `time thief victim,victim,...`, got {line.strip()!r}")
        try:
            time = float(tokens[0])
            worker = int(tokens[1])
            probed = [int(v) for v in tokens[2].split(",")]
        except ValueError:
            raise ValueError(f"{where}: the time must be a number, the thief and victims integers") from None
        if not math.isfinite(time):
            raise ValueError(f"{where}: the time must be finite, got {tokens[0]!r}")
        at.append(time)
        thief.append(worker)
        victims += probed
        offsets.append(len(victims))
    return StealScript(
        np.asarray(at, dtype=np.float64),
        np.asarray(thief, dtype=np.int64),
        np.asarray(victims, dtype=np.int64),
        np.asarray(offsets, dtype=np.int64),
    )
