"""A scheduler's bounded record of its recent tasks, for `sparrow tasks` and `Client.tasks`.

Each task that gets an outcome at the scheduler is recorded once (`add`, O(1)): who ran it, how it ended,
where, how often it was launched, how long it waited and ran, and the last line of its error. The record is
bounded twice: at most `max_records` records (the oldest goes first) and none older than `max_age` seconds
(dropped before each query). A record takes about RECORD_BYTES bytes (measured in
tests/runtime/services/test_task_history.py), so the default cap holds it to a few tens of MB.

The end of what a task printed (its output tail, at most MAX_OUTPUT_TAIL bytes: its stdout's end, then its
stderr's) is kept apart, for the tasks that printed (`add_output`, called only for those), in a table bounded by
bytes (`max_tail_bytes`, the oldest tails going first) and by count (`max_records`), so records stay small.

`query` answers a TasksRequest newest first, filtered by user, state, job and age; the scheduler decides
whose records a client may see (scheduler_logic.py) and sends as many as its link takes (`fitting`).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

import msgspec

from ..wire.limits import MAX_ERROR_SUMMARY, MAX_OUTPUT_TAIL
from ..wire.messages import FAILURES, Output, TaskRecord

DEFAULT_MAX_RECORDS = 50_000
DEFAULT_MAX_AGE = 3600.0  # seconds a record is kept
DEFAULT_MAX_TAIL_BYTES = 16 * 1024 * 1024  # bytes of output tails kept, all records together
RECORD_BYTES = 400  # about what one record of a short error takes in memory (the tests hold it to this)

# the state a record names for an outcome's `failure` (0: the task returned or raised)
FAILURE_NAMES = dict(
    zip(FAILURES, ("system", "cancelled", "timed_out", "unplaceable", "too_large", "lost_input"), strict=True)
)
OK = "ok"
RAISED = "raised"


class TaskEntry(msgspec.Struct, gc=False):
    """One task as the scheduler records it at its outcome (a hot path: the records are made when asked for).
    `ok` and `failure` as in its Outcome, `error` its error_summary ("" if ok), `node` where it ran ("" if
    nowhere), and the scheduler clock's times of its job's submission, its last launch and its outcome.

    Never tracked by the garbage collector (gc=False: it holds only numbers and strings, so it is in no cycle):
    a tuple per task, tracked until its first collection, made the scheduler's collector run every 700 tasks
    and scan every job in flight, about 1 us per task on the submit path."""

    job_id: int
    task: int
    user: str
    ok: bool
    failure: int
    error: str
    node: str
    attempts: int
    submitted: float
    launched: float
    ended: float


def error_summary(error: str) -> str:
    """The last non-empty line of a task's error (a traceback's names the exception), clipped."""
    line = error[-4 * MAX_ERROR_SUMMARY :].rstrip().rpartition("\n")[2].strip()
    return line if len(line) <= MAX_ERROR_SUMMARY else line[: MAX_ERROR_SUMMARY - 3] + "..."


class TaskHistory:
    """The last `max_records` task entries of one scheduler, none older than `max_age` seconds by `clock` (the
    scheduler's clock: entries are timed with it; `wall` dates the records a query returns).

    `add(entry)` records one task (a TaskEntry appended to a bounded deque: the least the scheduler can do per
    task, a hot path); the records are made when asked for.
    """

    def __init__(
        self,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_age: float = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        max_tail_bytes: int = DEFAULT_MAX_TAIL_BYTES,
    ) -> None:
        if not isinstance(max_records, int) or max_records < 0:
            raise ValueError(f"max_records must be a count >= 0, got {max_records!r}")
        if not 0 < max_age < float("inf"):
            raise ValueError(f"max_age must be a number of seconds > 0, got {max_age!r}")
        self.max_age = max_age
        self.clock = clock
        self.wall = wall
        self.entries: deque[TaskEntry] = deque(maxlen=max_records)
        self.add = self.entries.append
        self.max_tail_bytes = max_tail_bytes
        self.tails: OrderedDict[tuple[int, int], bytes] = OrderedDict()  # (job id, task) -> its output tail
        self.tail_bytes = 0
        self._max_tails = max_records

    def add_output(self, job_id: int, task: int, output: Output) -> None:
        """Keep the end of task `task` of job `job_id`'s `output` (before its record is added)."""
        tail = (output.stdout[-MAX_OUTPUT_TAIL:] + output.stderr[-MAX_OUTPUT_TAIL:])[-MAX_OUTPUT_TAIL:]
        tails, key = self.tails, (job_id, task)
        old = tails.pop(key, None)
        if old is not None:
            self.tail_bytes -= len(old)
        tails[key] = tail
        self.tail_bytes += len(tail)
        while self.tail_bytes > self.max_tail_bytes or len(tails) > self._max_tails:
            self.tail_bytes -= len(tails.popitem(last=False)[1])

    def __len__(self) -> int:
        self._expire(self.clock())
        return len(self.entries)

    def _expire(self, now: float) -> None:
        entries = self.entries
        oldest = now - self.max_age
        while entries and entries[0].ended < oldest:
            entries.popleft()

    def query(
        self, user: str | None, failed: bool = False, job_id: int = -1, since: float = 0.0, limit: int = 1000
    ) -> list[TaskRecord]:
        """At most `limit` records, newest first: of `user` (None: anyone's), only failed ones (not ok), only
        of job `job_id` (-1: any), only ended in the last `since` seconds (0: any)."""
        now = self.clock()
        self._expire(now)
        to_wall = self.wall() - now
        after = now - since if since else -float("inf")
        found: list[TaskRecord] = []
        for e in reversed(self.entries):
            if e.ended < after or len(found) >= limit:
                break
            if (user is None or e.user == user) and (job_id < 0 or e.job_id == job_id) and not (failed and e.ok):
                found.append(_as_record(e, to_wall, self.tails.get((e.job_id, e.task), b"")))
        return found


def _as_record(e: TaskEntry, to_wall: float, tail: bytes) -> TaskRecord:
    state = OK if e.ok else FAILURE_NAMES.get(e.failure, RAISED)
    return TaskRecord(
        e.job_id,
        e.task,
        e.user,
        state,
        e.node,
        e.attempts,
        e.launched - e.submitted,
        e.ended - e.launched,
        e.error,
        tail.decode(errors="replace")[-MAX_OUTPUT_TAIL:],  # a tail cut inside a character starts with U+FFFD
        e.ended + to_wall,
    )


RECORD_WIRE_BYTES = 96  # bytes of an encoded record besides its text, generously (numbers and msgpack headers)


def fitting(records: list[TaskRecord], room: int) -> list[TaskRecord]:
    """The first of `records` that fit, encoded, in `room` bytes (each counted at 4 bytes a character of text:
    a reply never exceeds its link's frame limit)."""
    for i, r in enumerate(records):
        room -= RECORD_WIRE_BYTES + 4 * (len(r.user) + len(r.state) + len(r.node) + len(r.error) + len(r.output_tail))
        if room < 0:
            return records[:i]
    return records
