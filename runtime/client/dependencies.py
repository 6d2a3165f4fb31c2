"""Tasks that wait for other tasks: which task waits for which inputs, the error of a task whose input
failed, and running consequences one after another.

`Dependencies` and `Settler` are sans-I/O (no trio, no threads): the client logic (logic.py) is their
one user, for Client and SparrowExecutor alike, and applies the failure rules (docs/runtime.md,
"Dependencies and Dask").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from ..errors import DependencyFailed
from ..wire.messages import ValueRef
from .task_inputs import Inputs

Key = TypeVar("Key", bound=Hashable)  # the name of a task, waiting or awaited (the logic's: (Job, task))


class Waiting(Generic[Key]):
    """A task waiting for its inputs: `target` is its owner's name for it (a future, a job's task),
    `template` its pickled call with Slots, `values` the inputs known so far: each a pickled value, or a
    reference to one kept at a node monitor."""

    __slots__ = ("keys", "missing", "paths", "target", "template", "values")

    def __init__(self, target: Key, template: bytes, inputs: Inputs) -> None:
        self.target = target
        self.template = template
        self.keys: list[Key] = inputs.keys
        self.paths = inputs.paths
        self.values: list[bytes | ValueRef | None] = [None] * len(inputs.keys)
        self.missing = len(inputs.keys)

    def all_values(self) -> list[bytes | ValueRef]:
        """Every input's value or reference, once all are known (when `Dependencies.done` returns it)."""
        values = [v for v in self.values if v is not None]
        assert len(values) == len(self.values), "an input of this task is still missing"
        return values


class Dependencies(Generic[Key]):
    """The tasks that wait for inputs, by input. An input is any hashable name of a task's outcome."""

    def __init__(self) -> None:
        self._by_input: dict[Key, list[Waiting[Key]]] = {}
        self._by_target: dict[Key, Waiting[Key]] = {}

    def __len__(self) -> int:
        """How many tasks wait."""
        return len(self._by_target)

    def awaited(self, key: Key) -> bool:
        """Whether some task waits for input `key`."""
        return key in self._by_input

    def wait(self, target: Key, template: bytes, inputs: Inputs) -> Waiting[Key]:
        """Record that `target` waits for `inputs.keys` (each must later be passed to done/failed)."""
        waiting = Waiting(target, template, inputs)
        self._by_target[target] = waiting
        for key in inputs.keys:
            self._by_input.setdefault(key, []).append(waiting)
        return waiting

    def done(self, key: Key, value: bytes | ValueRef) -> list[Waiting[Key]]:
        """Input `key` has the pickled `value` (or a reference to it): the tasks that now have all their
        inputs (no longer waiting)."""
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

    def failed(self, key: Key) -> list[tuple[Waiting[Key], str]]:
        """Input `key` failed or was cancelled: the tasks that waited for it (no longer waiting), each
        with where the input was in its arguments."""
        gone = []
        for waiting in self._by_input.pop(key, ()):
            if self._by_target.get(waiting.target) is waiting:
                del self._by_target[waiting.target]
                gone.append((waiting, waiting.paths[waiting.keys.index(key)]))
        return gone

    def drop(self, target: Key) -> bool:
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


class Settler:
    """Runs the consequences of outcomes one after another, not nested: a failure or a cancel that
    ends a waiting task is itself an outcome for the tasks waiting for that one (a chain of 1,000
    dependent tasks must not take 1,000 nested calls)."""

    def __init__(self, settle: Callable[..., None]) -> None:
        self._settle = settle
        self._queue: deque[tuple] = deque()
        self._running = False

    def __call__(self, *outcome: object) -> None:
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
