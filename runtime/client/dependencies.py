"""Tasks that wait for other tasks: which task waits for which inputs, what their failure means for
it, and sending the tasks that become ready in one pass of the trio loop together, as one Sparrow job
(the paper's "a query is a DAG of stages, each stage one job").

`Dependencies` is sans-I/O (no trio, no threads): its owner, SparrowExecutor or Client, calls it from
its trio thread as outcomes arrive. `TickBatch` collects what becomes ready while the outcomes of one
receive are handled (one pass, no checkpoint in between) and hands it over once, right after.
Failure rules (docs/runtime.md, "Dependencies and Dask"): a task whose input failed does not run and
fails with DependencyFailed naming the input; one whose input was cancelled is cancelled.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Hashable, Sequence

import cloudpickle
import trio

from ..errors import DependencyFailed
from ..wire.limits import MAX_TASKS_PER_JOB
from ..wire.messages import CANCELLED
from .core import FRAME_OVERHEAD_PER_JOB, FRAME_OVERHEAD_PER_TASK, Client, JobHandle, TaskRef
from .task_inputs import Inputs, pack_dependent

logger = logging.getLogger(__name__)


class Waiting:
    """A task waiting for its inputs: `target` is its owner's name for it (a future, a job's task),
    `template` its pickled call with Slots, `values` the pickled values of the inputs known so far."""

    __slots__ = ("keys", "missing", "paths", "target", "template", "values")

    def __init__(self, target: Hashable, template: bytes, inputs: Inputs) -> None:
        self.target = target
        self.template = template
        self.keys = inputs.keys
        self.paths = inputs.paths
        self.values: list[bytes | None] = [None] * len(inputs.keys)
        self.missing = len(inputs.keys)


class Dependencies:
    """The tasks that wait for inputs, by input. An input is any hashable name of a task's outcome."""

    def __init__(self) -> None:
        self._by_input: dict[Hashable, list[Waiting]] = {}
        self._by_target: dict[Hashable, Waiting] = {}

    def __len__(self) -> int:
        """How many tasks wait."""
        return len(self._by_target)

    def awaited(self, key: Hashable) -> bool:
        """Whether some task waits for input `key`."""
        return key in self._by_input

    def wait(self, target: Hashable, template: bytes, inputs: Inputs) -> Waiting:
        """Record that `target` waits for `inputs.keys` (each must later be passed to done/failed)."""
        waiting = Waiting(target, template, inputs)
        self._by_target[target] = waiting
        for key in inputs.keys:
            self._by_input.setdefault(key, []).append(waiting)
        return waiting

    def done(self, key: Hashable, value: bytes) -> list[Waiting]:
        """Input `key` has the pickled `value`: the tasks that now have all their inputs (no longer waiting)."""
        ready = []
        for waiting in self._by_input.pop(key, ()):
            if self._by_target.get(waiting.target) is not waiting:
                continue  # dropped, or failed by another input
            waiting.values[waiting.keys.index(key)] = value
            waiting.missing -= 1
            if not waiting.missing:
                del self._by_target[waiting.target]
                ready.append(waiting)
        return ready

    def failed(self, key: Hashable) -> list[tuple[Waiting, str]]:
        """Input `key` failed or was cancelled: the tasks that waited for it (no longer waiting), each
        with where the input was in its arguments."""
        gone = []
        for waiting in self._by_input.pop(key, ()):
            if self._by_target.get(waiting.target) is waiting:
                del self._by_target[waiting.target]
                gone.append((waiting, waiting.paths[waiting.keys.index(key)]))
        return gone

    def drop(self, target: Hashable) -> bool:
        """`target` no longer waits (it was cancelled); True if it was waiting."""
        return self._by_target.pop(target, None) is not None


def dependency_failed(path: str, upstream: BaseException) -> DependencyFailed:
    """The error of a task whose input at `path` failed with `upstream` (the first failure upstream is named)."""
    if isinstance(upstream, DependencyFailed):
        reason = upstream.reason
    else:
        reason = f"{type(upstream).__name__}: {upstream}".strip().rstrip(":")
    error = DependencyFailed(path, reason)
    error.__cause__ = upstream
    return error


def oversize_problem(size: int, max_frame: int) -> str | None:
    """Why a task payload of `size` bytes cannot be sent under `max_frame`, or None."""
    if size + FRAME_OVERHEAD_PER_TASK + FRAME_OVERHEAD_PER_JOB <= max_frame:
        return None
    return (
        f"the task with its inputs takes {size:,} bytes, over the frame limit of {max_frame:,} bytes: values "
        "travel through the client, so each task's arguments, inputs included, must fit in one frame "
        "(docs/runtime.md, Dependencies and Dask)"
    )


def split_jobs(sizes: Sequence[int], max_frame: int) -> list[range]:
    """Consecutive groups of tasks (by their payload sizes, each one fitting alone) that each fit one job."""
    groups = []
    start, used = 0, FRAME_OVERHEAD_PER_JOB
    for i, size in enumerate(sizes):
        cost = size + FRAME_OVERHEAD_PER_TASK
        if i > start and (used + cost > max_frame or i - start >= MAX_TASKS_PER_JOB):
            groups.append(range(start, i))
            start, used = i, FRAME_OVERHEAD_PER_JOB
        used += cost
    if start < len(sizes):
        groups.append(range(start, len(sizes)))
    return groups


class TickBatch:
    """Collects items added in the trio thread and calls `flush(items)` once, after the current pass of
    the trio loop: the outcomes of one receive are handled in one pass, so what they make ready is one
    batch. A flush that raises is logged, never lost silently, and stops nothing else."""

    def __init__(self, flush: Callable[[list], None]) -> None:
        self._flush = flush
        self._items: list = []

    def add(self, item) -> None:
        if not self._items:
            trio.lowlevel.current_trio_token().run_sync_soon(self._run)
        self._items.append(item)

    def _run(self) -> None:
        items, self._items = self._items, []
        try:
            self._flush(items)
        except Exception:  # a bug: the trio loop of the client must go on
            logger.exception("sending %d ready tasks failed", len(items))


class Settler:
    """Runs the consequences of outcomes one after another, not nested: a failure or a cancel that
    ends a waiting task is itself an outcome for the tasks waiting for that one (a chain of 1,000
    dependent tasks must not take 1,000 nested calls)."""

    def __init__(self, settle: Callable[..., None]) -> None:
        self._settle = settle
        self._queue: deque[tuple] = deque()
        self._running = False

    def __call__(self, *outcome) -> None:
        self._queue.append(outcome)
        if self._running:
            return
        self._running = True
        try:
            while self._queue:
                self._settle(*self._queue.popleft())
        finally:
            self._running = False
            self._queue.clear()


class ClientInputs:
    """The Client's side: tasks of its jobs that take other jobs' task outcomes (`partial(f, job[i])`).

    A held task is placed with the other tasks of its job that become ready in the same pass, as one
    placement; each input's value is the pickled result its outcome brought (never unpickled here).
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._deps = Dependencies()
        self._ready = TickBatch(self._place_ready)
        self._settle = Settler(self._settle_one)

    def hold(self, handle: JobHandle, held: dict[int, tuple[bytes, Inputs]]) -> None:
        """Record the held tasks of `handle`; inputs already done count at once."""
        known = set()
        for task, (template, inputs) in held.items():
            self._deps.wait(TaskRef(handle, task), template, inputs)
            for ref in inputs.keys:
                if self._upstream_outcome not in ref.handle._watchers:
                    ref.handle._watchers.append(self._upstream_outcome)
                if ref.handle._raw[ref.index] is not None:
                    known.add(ref)
        for ref in known:
            self._upstream_outcome(ref.handle, ref.index, *ref.handle._raw[ref.index])

    def _upstream_outcome(
        self, handle: JobHandle, task: int, ok: bool, payload: bytes, error: str, failure: int
    ) -> None:
        key = TaskRef(handle, task)
        if self._deps.awaited(key):
            self._settle(key, ok, payload, error, failure)

    def _settle_one(self, key: TaskRef, ok: bool, payload: bytes, error: str, failure: int) -> None:
        if ok:
            for waiting in self._deps.done(key, payload):
                self._ready.add(waiting)
        elif failure == CANCELLED:
            for waiting, _ in self._deps.failed(key):
                waiting.target.handle.cancel_tasks([waiting.target.index])
        else:
            upstream = key.handle._outcome(key.index).exception
            for waiting, path in self._deps.failed(key):
                self._fail(waiting.target, dependency_failed(path, upstream), error)

    def _fail(self, ref: TaskRef, exc: BaseException, error: str) -> None:
        """End held task `ref` with `exc` (re-raised with `error`, the upstream's traceback, as its cause)."""
        if ref.handle._raw[ref.index] is None:
            ref.handle._held.discard(ref.index)
            ref.handle._set(ref.index, False, cloudpickle.dumps(exc), error or str(exc))

    def _place_ready(self, ready: list[Waiting]) -> None:
        by_handle: dict[JobHandle, tuple[list[int], list[bytes]]] = {}
        for waiting in ready:
            ref = waiting.target
            if ref.handle._raw[ref.index] is not None:
                continue  # cancelled while it waited
            payload = pack_dependent(waiting.template, waiting.values)
            problem = oversize_problem(len(payload), self._client.max_frame)
            if problem is not None:
                self._fail(ref, ValueError(problem), problem)
                continue
            tasks, payloads = by_handle.setdefault(ref.handle, ([], []))
            tasks.append(ref.index)
            payloads.append(payload)
        for handle, (tasks, payloads) in by_handle.items():
            for group in split_jobs([len(p) for p in payloads], self._client.max_frame):
                self._client.place_held(handle, tasks[group.start : group.stop], payloads[group.start : group.stop])
