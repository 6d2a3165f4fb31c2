"""A bounded JSON-lines file that never stops its writer: the shared writing part of the experiment's logs
(placement_log.py, the schedulers'; steal_log.py, the node monitors').

The first line is a header object; then one object a line (`_line`), written as it comes (line-buffered: a
killed process loses at most the line being written), nothing held in memory, and at most `max_lines` of them
(closing then appends {"dropped": n}). Error handling: a write that fails logs a warning and turns the log off.
`read_objects` reads a log back.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)


class LineLog:
    """One log file at `path` (module docstring), opened with its `header` line."""

    def __init__(self, path: str | os.PathLike[str], header: dict, *, max_lines: int) -> None:
        # open for the log's life, closed by close(): no `with` block spans it
        self._file: IO[str] | None = open(path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
        self.path = Path(path)
        self.max_lines = max_lines
        self.lines = 0
        self.dropped = 0
        self._write(header)

    def _line(self, obj: dict) -> None:
        if self._file is None:
            return
        if self.lines >= self.max_lines:
            self.dropped += 1
            return
        self._write(obj)
        self.lines += 1

    def close(self) -> None:
        if self._file is not None and self.dropped:
            self._write({"dropped": self.dropped})
        if self._file is not None:
            self._file.close()
            self._file = None

    def _write(self, obj: dict) -> None:
        assert self._file is not None
        try:
            self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        except (OSError, ValueError) as exc:
            logger.warning("log %s: %s; it is off from here", self.path, exc)
            self._file = None


def read_objects(path: str | os.PathLike[str], what: str) -> Iterator[tuple[int, dict]]:
    """Each line of the log at `path` as (its line number, its object); blank lines skipped.

    Error handling: ValueError naming the file and line for a line that is not a JSON object (`what`: the log's
    name, for the message); a last line cut short (its writer killed mid-write) is left out."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if number == len(lines):  # the file does not end with a newline: cut short
                break
            raise ValueError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{number}: not a {what} line")
        yield number, obj
