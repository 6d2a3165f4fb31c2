"""Reservation queues: the kernel (sparrow_core.ReservationQueue) beside pure-Python queues
doing the same work (collections.deque for fifo, heapq for priority, a dict of deques with a
heapq of user passes for fair: the same stride scheduling). Figures: push + pop pairs per
second through the batch calls (push_many / pop_many) and through single Python calls.

Import-safe: with a sparrow_core lacking the queue or its batch calls, those benchmarks are
skipped (setup raises NotImplementedError), never an import error.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import ClassVar

from bench.common import queue_pushes
from bench.measure import Case, KernelBenchmark

try:
    import sparrow_core
except ImportError:  # the suite must import with any version of the package
    sparrow_core = None

# The kernel's queue policies; builds older than sparrow_core.QUEUE_POLICIES had these three.
POLICIES = list(getattr(sparrow_core, "QUEUE_POLICIES", ("fifo", "priority", "fair")))


# ---- pure-Python baselines doing the kernel's work: push(job, user, priority),
# pop() -> (job, user, priority), cancel(job) -> count, per-user counts ----


class PythonQueue:
    """The bookkeeping all policies share, as the kernel does it: per job a live count and a
    token (cancel is O(1): entries of a cancelled job are skipped when reached), one user per
    job, per-user counts. Subclasses keep (job, token, user, priority) entries in order."""

    def __init__(self) -> None:
        self.jobs: dict = {}  # job -> [token, live count, user]
        self.counts: dict = {}
        self.tokens = itertools.count(1)

    def _admit(self, job: int, user: int) -> int:
        state = self.jobs.get(job)
        if state is None:
            state = self.jobs[job] = [next(self.tokens), 0, user]
        elif state[2] != user:
            raise ValueError(f"job {job} already has reservations queued for user {state[2]!r}, not {user!r}")
        state[1] += 1
        self.counts[user] = self.counts.get(user, 0) + 1
        return state[0]

    def _live(self, entry) -> bool:
        state = self.jobs.get(entry[0])
        return state is not None and state[0] == entry[1]

    def _consume(self, entry):
        job, _, user, priority = entry
        state = self.jobs[job]
        state[1] -= 1
        if not state[1]:
            del self.jobs[job]
        self.counts[user] -= 1
        return job, user, priority

    def cancel(self, job: int) -> int:
        state = self.jobs.pop(job, None)
        if state is None:
            return 0
        self.counts[state[2]] -= state[1]
        return state[1]


class PythonFifoQueue(PythonQueue):
    def __init__(self) -> None:
        super().__init__()
        self.queue: deque = deque()

    def push(self, job: int, user: int, priority: int = 0) -> None:
        self.queue.append((job, self._admit(job, user), user, priority))

    def pop(self):
        queue = self.queue
        while queue:
            entry = queue.popleft()
            if self._live(entry):
                return self._consume(entry)
        return None


class PythonPriorityQueue(PythonQueue):
    """Lower priority first, FIFO within a level (heapq keyed by (priority, arrival))."""

    def __init__(self) -> None:
        super().__init__()
        self.heap: list = []
        self.seq = itertools.count()

    def push(self, job: int, user: int, priority: int = 0) -> None:
        heapq.heappush(self.heap, (priority, next(self.seq), (job, self._admit(job, user), user, priority)))

    def pop(self):
        while self.heap:
            entry = heapq.heappop(self.heap)[2]
            if self._live(entry):
                return self._consume(entry)
        return None


class PythonFairQueue(PythonQueue):
    """Stride scheduling over per-user FIFOs (a dict of deques and a heapq of user passes):
    serve the backlogged user with the smallest pass (ties: backlogged longest), charge it
    1/weight; a user becoming backlogged starts at the current virtual time."""

    def __init__(self, weights: dict | None = None) -> None:
        super().__init__()
        self.queues: dict = {}
        self.passes: dict = {}
        self.since: dict = {}  # order of becoming backlogged; also tells stale heap nodes
        self.weights = weights or {}
        self.heap: list = []
        self.backlogs = itertools.count()
        self.vtime = 0.0

    def push(self, job: int, user: int, priority: int = 0) -> None:
        backlogged = self.counts.get(user, 0) > 0
        entry = (job, self._admit(job, user), user, priority)
        queue = self.queues.get(user)
        if queue is None:
            queue = self.queues[user] = deque()
        if not backlogged:
            queue.clear()  # only dead entries of cancelled jobs can be left
            start = self.passes[user] = max(self.passes.get(user, 0.0), self.vtime)
            since = self.since[user] = next(self.backlogs)
            heapq.heappush(self.heap, (start, since, user))
        queue.append(entry)

    def pop(self):
        while self.heap:
            start, since, user = heapq.heappop(self.heap)
            if self.counts[user] == 0 or self.since[user] != since:
                continue  # the user's jobs were cancelled since
            queue = self.queues[user]
            while not self._live(queue[0]):
                queue.popleft()
            entry = queue.popleft()
            self.vtime = start
            self.passes[user] = start + 1.0 / self.weights.get(user, 1.0)
            result = self._consume(entry)
            if self.counts[user]:
                heapq.heappush(self.heap, (self.passes[user], since, user))
            return result
        return None


PYTHON_QUEUES = {"fifo": PythonFifoQueue, "priority": PythonPriorityQueue, "fair": PythonFairQueue}


# ---- cases ----


def push_pop_case(policy: str, n_users: int, n_pushes: int = 100_000) -> Case:
    """Fill a queue with n_pushes reservations of n_users users, then drain it."""
    if sparrow_core is None or not hasattr(sparrow_core, "ReservationQueue"):
        raise NotImplementedError("sparrow_core has no ReservationQueue")
    if not hasattr(sparrow_core.ReservationQueue, "push_many"):
        raise NotImplementedError("sparrow_core.ReservationQueue has no push_many")
    jobs, users, priorities = queue_pushes(n_pushes, n_users)
    triples = list(zip(jobs.tolist(), users.tolist(), priorities.tolist()))
    kernel, python = sparrow_core.ReservationQueue(policy), PYTHON_QUEUES[policy]()

    def batch():
        kernel.push_many(jobs, users, priorities)
        return kernel.pop_many(n_pushes)[0]

    def calls():
        push, pop = kernel.push, kernel.pop
        for job, user, priority in triples:
            push(job, user, priority)
        return [pop().job_id for _ in range(n_pushes)]

    def baseline():
        push, pop = python.push, python.pop
        for job, user, priority in triples:
            push(job, user, priority)
        return [pop()[0] for _ in range(n_pushes)]

    return Case(
        f"queue push+pop, {policy}, {n_users} users, {n_pushes:,} queued",
        "pairs",
        n_pushes,
        {"batch": batch, "calls": calls, "python": baseline},
        lambda out: sorted(map(int, out)),
    )


# ---- asv ----


class QueuePushPop(KernelBenchmark):
    """100,000 reservations pushed then popped, per policy and number of users."""

    params = (POLICIES, [1, 100])
    param_names: ClassVar[list[str]] = ["policy", "n_users"]

    def make_case(self, policy: str, n_users: int) -> Case:
        return push_pop_case(policy, n_users)

    def time_push_many_pop_many(self, policy: str, n_users: int) -> None:
        self.case.variants["batch"]()

    def time_push_pop_calls(self, policy: str, n_users: int) -> None:
        self.case.variants["calls"]()

    def time_python_push_pop(self, policy: str, n_users: int) -> None:
        self.case.variants["python"]()

    def track_pairs_per_second_batch(self, policy: str, n_users: int) -> float:
        return self.case.rate("batch")

    track_pairs_per_second_batch.unit = "pairs/s"  # type: ignore[attr-defined]

    def track_pairs_per_second_calls(self, policy: str, n_users: int) -> float:
        return self.case.rate("calls")

    track_pairs_per_second_calls.unit = "pairs/s"  # type: ignore[attr-defined]
