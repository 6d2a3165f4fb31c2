"""A scheduler's bounded record of its recent tasks, for `sparrow tasks` and `Client.tasks`.

Each task that gets an outcome at the scheduler is recorded once (`record`, O(1)): who ran it, how it ended,
where, how often it was launched, how long it waited and ran, and the last line of its error. The record is
bounded twice: at most `max_records` records (the oldest goes first) and none older than `max_age` seconds
(dropped as new ones come and before each query). A record takes about RECORD_BYTES bytes (measured in
tests/runtime/services/test_task_history.py), so the default cap holds it to a few tens of MB.

`query` answers a TasksRequest newest first, filtered by user, state, job and age; the scheduler decides
whose records a client may see (scheduler_logic.py) and sends as many as its link takes (`fitting`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from ..wire.limits import MAX_ERROR_SUMMARY
from ..wire.messages import FAILURES, TaskRecord

DEFAULT_MAX_RECORDS = 50_000
DEFAULT_MAX_AGE = 3600.0  # seconds a record is kept
RECORD_BYTES = 400  # about what one record of a short error takes in memory (the tests hold it to this)

# the state a record names for an outcome's `failure` (0: the task returned or raised)
FAILURE_NAMES = dict(
    zip(FAILURES, ("system", "cancelled", "timed_out", "unplaceable", "too_large", "lost_input"), strict=True)
)
OK = "ok"
RAISED = "raised"


def error_summary(error: str) -> str:
    """The last non-empty line of a task's error (a traceback's names the exception), clipped."""
    line = error[-4 * MAX_ERROR_SUMMARY :].rstrip().rpartition("\n")[2].strip()
    return line if len(line) <= MAX_ERROR_SUMMARY else line[: MAX_ERROR_SUMMARY - 3] + "..."


class TaskHistory:
    """The last `max_records` task records of one scheduler, none older than `max_age` seconds by `clock`
    (a wall clock: records are dated with it)."""

    def __init__(
        self,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_age: float = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(max_records, int) or max_records < 0:
            raise ValueError(f"max_records must be a count >= 0, got {max_records!r}")
        if not 0 < max_age < float("inf"):
            raise ValueError(f"max_age must be a number of seconds > 0, got {max_age!r}")
        self.max_age = max_age
        self.clock = clock
        self.records: deque[TaskRecord] = deque(maxlen=max_records)

    def __len__(self) -> int:
        return len(self.records)

    def record(
        self,
        job_id: int,
        task: int,
        user: str,
        ok: bool,
        failure: int,
        error: str,
        node: str,
        attempts: int,
        queue_wait: float,
        run_time: float,
    ) -> None:
        """Record one task's outcome (`ok`, `failure` and `error` as in its Outcome)."""
        if ok:
            state, summary = OK, ""
        else:
            state, summary = FAILURE_NAMES.get(failure, RAISED), error_summary(error)
        now = self.clock()
        records = self.records
        records.append(TaskRecord(job_id, task, user, state, node, attempts, queue_wait, run_time, summary, "", now))
        self._expire(now)

    def _expire(self, now: float) -> None:
        records = self.records
        oldest = now - self.max_age
        while records and records[0].ended_at < oldest:
            records.popleft()

    def query(
        self, user: str | None, failed: bool = False, job_id: int = -1, since: float = 0.0, limit: int = 1000
    ) -> list[TaskRecord]:
        """At most `limit` records, newest first: of `user` (None: anyone's), only failed ones (not ok), only
        of job `job_id` (-1: any), only ended in the last `since` seconds (0: any)."""
        now = self.clock()
        self._expire(now)
        after = now - since if since else -float("inf")
        found: list[TaskRecord] = []
        for r in reversed(self.records):
            if r.ended_at < after or len(found) >= limit:
                break
            if (
                (user is None or r.user == user)
                and (job_id < 0 or r.job_id == job_id)
                and not (failed and r.state == OK)
            ):
                found.append(r)
        return found


RECORD_WIRE_BYTES = 96  # bytes of an encoded record besides its text, generously (numbers and msgpack headers)


def fitting(records: list[TaskRecord], room: int) -> list[TaskRecord]:
    """The first of `records` that fit, encoded, in `room` bytes (each counted at 4 bytes a character of text:
    a reply never exceeds its link's frame limit)."""
    for i, r in enumerate(records):
        room -= RECORD_WIRE_BYTES + 4 * (len(r.user) + len(r.state) + len(r.node) + len(r.error) + len(r.output_tail))
        if room < 0:
            return records[:i]
    return records
