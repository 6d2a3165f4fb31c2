"""Reading a workload trace: one job per line, `arrival_time n_tasks duration... [field=value...]`.

A line gives either one duration (shared by all the job's tasks) or one per task, then optional
fields: `workers=W,W,...` (the job may run only on these worker ids), `workers.T=W,W,...`
(task T, counted from 0, only on these; with `workers=` too, only on those of them that are
also the job's), `id=NAME` (a name for the job, not all digits), `after=REF,REF,...` (the job
is released only once these jobs have finished: each REF is an id= name, or a job number
counting job lines from 0, of a job on an earlier line) and `probes=W,W,...` (a replayed
placement: the job's reservations go to these workers, a worker listed twice getting two, at
least one per task, instead of the batch sampling's draw; the policies that batch-sample only,
and every line of the trace then gives one, without constraints). Blank lines and `#` comments are
skipped; arrival times must not decrease. Old traces (no fields) read as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from os import PathLike

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Trace:
    """Jobs in arrival order: job j has n_tasks[j] tasks, durations flat in job order, and came
    from line lines[j] of the file. Constraints (None when no line has any): job j's workers are
    job_candidates[job_offsets[j]:job_offsets[j + 1]] (empty: any), the i-th task of the trace's
    task_candidates[task_offsets[i]:task_offsets[i + 1]] (empty: unconstrained). Dependencies
    (None when no line has any): job j waits for the earlier jobs
    parents[parent_offsets[j]:parent_offsets[j + 1]]. A replayed placement (None when no line
    has one): job j probes the workers probes[probe_offsets[j]:probe_offsets[j + 1]]."""

    arrival: npt.NDArray[np.float64]
    n_tasks: npt.NDArray[np.int64]
    durations: npt.NDArray[np.float64]
    lines: npt.NDArray[np.int64] | None = None
    job_candidates: npt.NDArray[np.int64] | None = None
    job_offsets: npt.NDArray[np.int64] | None = None
    task_candidates: npt.NDArray[np.int64] | None = None
    task_offsets: npt.NDArray[np.int64] | None = None
    parents: npt.NDArray[np.int64] | None = None
    parent_offsets: npt.NDArray[np.int64] | None = None
    probes: npt.NDArray[np.int64] | None = None
    probe_offsets: npt.NDArray[np.int64] | None = None

    def arrays(self) -> dict[str, npt.NDArray]:
        """The arrays the compiled simulator takes (constraints and dependencies only when the
        trace has some)."""
        names = ["arrival", "n_tasks", "durations", "lines"]
        if self.job_offsets is not None:
            names += ["job_candidates", "job_offsets", "task_candidates", "task_offsets"]
        if self.parent_offsets is not None:
            names += ["parents", "parent_offsets"]
        if self.probe_offsets is not None:
            names += ["probes", "probe_offsets"]
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


def _number(text: str, what: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: {what} must be a finite number >= 0, got {text!r}")
    return value


def _workers(text: str, what: str, where: str, *, distinct: bool = True) -> list[int]:
    """Worker ids >= 0 separated by commas (each once, if `distinct`)."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"{where}: {what} must be worker ids separated by commas, got {text!r}") from None
    seen: set[int] = set()
    for w in ids:
        if w < 0:
            raise ValueError(f"{where}: {what}: worker id {w} must be >= 0")
        if distinct and w in seen:
            raise ValueError(f"{where}: {what}: worker id {w} appears twice")
        seen.add(w)
    return ids


class _Constraints:
    """The constraints of the jobs read so far, flat (see Trace)."""

    def __init__(self) -> None:
        self.job_candidates: list[int] = []
        self.job_offsets = [0]
        self.task_candidates: list[int] = []
        self.task_offsets = [0]
        self.any = False

    def add(self, fields: dict[str, str], n_tasks: int, where: str) -> None:
        """Records one job's constraints, taking its workers= and workers.T= fields out of `fields`."""
        job = _workers(fields.pop("workers"), "workers", where) if "workers" in fields else []
        tasks: dict[int, list[int]] = {}
        for key in [k for k in fields if k.startswith("workers.")]:
            tasks[self._task(key, n_tasks, where)] = _workers(fields.pop(key), key, where)
        self.any = self.any or bool(job or tasks)
        self.job_candidates += job
        self.job_offsets.append(len(self.job_candidates))
        for t in range(n_tasks):
            self.task_candidates += tasks.get(t, [])
            self.task_offsets.append(len(self.task_candidates))

    @staticmethod
    def _task(key: str, n_tasks: int, where: str) -> int:
        text = key.removeprefix("workers.")
        if not text.isdigit():
            raise ValueError(f"{where}: {key}: the task must be a number from 0, got {text!r}")
        task = int(text)
        if task >= n_tasks:
            raise ValueError(f"{where}: {key}: the job has {n_tasks} tasks (0 to {n_tasks - 1})")
        return task


class _Dependencies:
    """The dependencies of the jobs read so far, flat (see Trace), and the jobs' names."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}  # id= name -> job number
        self.parents: list[int] = []
        self.parent_offsets = [0]
        self.any = False

    def add(self, fields: dict[str, str], job: int, where: str) -> None:
        """Records job number `job`'s id= and after= fields, taking them out of `fields`."""
        name = fields.pop("id", None)
        if name is not None:
            if not name or name.isdigit() or "," in name:
                raise ValueError(f"{where}: id must be a name, not all digits and without commas, got {name!r}")
            if name in self.ids:
                raise ValueError(f"{where}: id {name!r} is already the name of job {self.ids[name]}")
        parents: list[int] = []
        for ref in fields.pop("after").split(",") if "after" in fields else []:
            parent = int(ref) if ref.isdigit() and int(ref) < job else self.ids.get(ref)
            if parent is None:
                raise ValueError(
                    f"{where}: after={ref}: no such job on an earlier line (a job waits only for "
                    f"jobs listed before it, by id= name or by number from 0)"
                )
            if parent in parents:
                raise ValueError(f"{where}: after= lists job {ref} twice")
            parents.append(parent)
        if name is not None:
            self.ids[name] = job
        self.any = self.any or bool(parents)
        self.parents += parents
        self.parent_offsets.append(len(self.parents))


class _Placement:
    """The replayed placement of the jobs read so far, flat (see Trace): every job has one, or none."""

    def __init__(self) -> None:
        self.probes: list[int] = []
        self.probe_offsets = [0]
        self.given = 0  # jobs with a probes= field

    def add(self, fields: dict[str, str], n_tasks: int, constrained: bool, where: str) -> None:
        """Records one job's probes= field, taking it out of `fields`."""
        if "probes" in fields:
            probes = _workers(fields.pop("probes"), "probes", where, distinct=False)
            if len(probes) < n_tasks:
                raise ValueError(
                    f"{where}: probes= must give at least one worker per task ({n_tasks}), got {len(probes)}"
                )
            if constrained:
                raise ValueError(f"{where}: probes= cannot be combined with workers= constraints")
            self.given += 1
            self.probes += probes
        elif self.given:
            raise ValueError(f"{where}: every job needs probes= once one has it (a replayed placement is whole)")
        self.probe_offsets.append(len(self.probes))

    def check_whole(self, jobs: int, path: str | PathLike[str]) -> None:
        if 0 < self.given < jobs:
            raise ValueError(f"{path}: every job needs probes= once one has it (a replayed placement is whole)")


def _fields(tokens: list[str], where: str) -> dict[str, str]:
    """`key=value` tokens as a dict; a key given twice is an error."""
    out: dict[str, str] = {}
    for token in tokens:
        key, _, value = token.partition("=")
        if key in out:
            raise ValueError(f"{where}: {key}= is given twice")
        out[key] = value
    return out


def token_lines(path: str | PathLike[str]) -> Iterator[tuple[int, str, list[str]]]:
    """Each line of the file at `path` that holds something, as (its line number, the line, its tokens): blank
    lines and `#` comments skipped (a trace's format, and a steal script's)."""
    with open(path, encoding="utf-8") as text:
        for lineno, line in enumerate(text, start=1):
            tokens = line.split("#", 1)[0].split()
            if tokens:
                yield lineno, line, tokens


def read_trace(path: str | PathLike[str]) -> Trace:
    """Parses the trace file at `path`.

    Error handling: a malformed line raises ValueError naming the file and line number; a
    missing file raises FileNotFoundError.
    """
    arrival: list[float] = []
    n_tasks: list[int] = []
    durations: list[float] = []
    lines: list[int] = []
    constraints = _Constraints()
    dependencies = _Dependencies()
    placement = _Placement()
    for lineno, line, tokens in token_lines(path):
        where = f"{path}:{lineno}"
        n_given = next((i for i, token in enumerate(tokens) if "=" in token), len(tokens))
        fields = tokens[n_given:]
        tokens = tokens[:n_given]
        if len(tokens) < 3:
            raise ValueError(
                f"{where}: expected `arrival_time n_tasks duration... [field=value...]`, got {line.strip()!r}"
            )
        if any("=" not in field for field in fields):
            raise ValueError(f"{where}: durations must come before the field=value fields")
        time = _number(tokens[0], "arrival_time", where)
        if arrival and time < arrival[-1]:
            raise ValueError(f"{where}: arrival_time {time} is earlier than the previous job's {arrival[-1]}")
        try:
            m = int(tokens[1])
        except ValueError:
            raise ValueError(f"{where}: n_tasks must be an integer, got {tokens[1]!r}") from None
        if m < 1:
            raise ValueError(f"{where}: n_tasks must be >= 1, got {m}")
        given = [_number(token, "duration", where) for token in tokens[2:]]
        if len(given) not in (1, m):
            raise ValueError(f"{where}: expected 1 or {m} durations (n_tasks = {m}), got {len(given)}")
        named = _fields(fields, where)
        constrained = "workers" in named or any(k.startswith("workers.") for k in named)
        placement.add(named, m, constrained, where)
        constraints.add(named, m, where)
        dependencies.add(named, len(arrival), where)
        if named:
            expected = "workers=, workers.TASK=, id=, after= or probes="
            raise ValueError(f"{where}: unknown field {next(iter(named))!r} (expected {expected})")
        arrival.append(time)
        n_tasks.append(m)
        durations.extend(given * m if len(given) == 1 else given)
        lines.append(lineno)
    if not arrival:
        raise ValueError(f"{path}: the trace holds no job")
    placement.check_whole(len(arrival), path)
    flat: dict[str, npt.NDArray[np.int64]] = {}
    if constraints.any:
        flat |= {
            name: np.asarray(getattr(constraints, name), dtype=np.int64)
            for name in ("job_candidates", "job_offsets", "task_candidates", "task_offsets")
        }
    if dependencies.any:
        flat |= {
            name: np.asarray(getattr(dependencies, name), dtype=np.int64) for name in ("parents", "parent_offsets")
        }
    if placement.given:
        flat |= {name: np.asarray(getattr(placement, name), dtype=np.int64) for name in ("probes", "probe_offsets")}
    return Trace(
        np.asarray(arrival, dtype=np.float64),
        np.asarray(n_tasks, dtype=np.int64),
        np.asarray(durations, dtype=np.float64),
        np.asarray(lines, dtype=np.int64),
        **flat,
    )
