"""How tasks and their outcomes travel: cloudpickled callables in, pickled results or exceptions out.

A task payload is `cloudpickle.dumps((fn, args, kwargs))`. Running it yields an `Outcome`
(messages.py): ok with the pickled return value, or not ok with the pickled exception (empty if it
cannot be pickled) and the formatted remote traceback in `error`. A failure that is not the task's
own exception (its process died, its node monitor was lost) has an empty payload, the reason in
`error` and its cause in `failure`.
"""

from __future__ import annotations

import pickle
import traceback

import cloudpickle

from ..errors import RemoteTraceback, TaskCancelled, TaskFailed, TaskTimeout, ValueLost
from .messages import CANCELLED, LOST_INPUT, TIMED_OUT, Outcome

# Results of these exact types pickle to the same bytes with the C pickler as with cloudpickle's
# Python-level Pickler, at a tenth of the cost (a no-op task's outcome is one of them).
_PLAIN_TYPES = frozenset((type(None), bool, int, float, str, bytes))


def pack_task(fn, args: tuple = (), kwargs: dict | None = None) -> bytes:
    """Serialise a call of `fn`; raises TypeError naming `fn` if it cannot be pickled."""
    if not callable(fn):
        raise TypeError(f"a task must be callable, got {type(fn).__name__}")
    try:
        return cloudpickle.dumps((fn, args, kwargs or {}))
    except Exception as exc:
        raise TypeError(f"task {fn!r} cannot be pickled: {exc}") from exc


def run_task(payload: bytes, inputs: list | None = None) -> Outcome:
    """Run a packed task here, with `inputs` (if not None) as the call's last positional argument; never
    raises (every failure becomes a not-ok outcome)."""
    try:
        fn, args, kwargs = cloudpickle.loads(payload)
        result = fn(*args, **kwargs) if inputs is None else fn(*args, inputs, **kwargs)
    except BaseException as exc:
        tb = "".join(traceback.format_exception(exc))
        try:
            data = cloudpickle.dumps(exc)
        except Exception:
            data = b""
        return Outcome(False, data, tb)
    try:
        if type(result) in _PLAIN_TYPES:
            return Outcome(True, pickle.dumps(result, cloudpickle.DEFAULT_PROTOCOL))
        return Outcome(True, cloudpickle.dumps(result))
    except Exception as exc:
        return Outcome(False, b"", f"the task's result {type(result).__name__} could not be pickled: {exc!r}")


def unpack_outcome(outcome: Outcome):
    """The task's value; or raises its exception (with RemoteTraceback as __cause__), TaskFailed,
    TaskTimeout or TaskCancelled (by `failure`, messages.py)."""
    if outcome.ok:
        return cloudpickle.loads(outcome.payload)
    raise outcome_exception(outcome)


def outcome_exception(outcome: Outcome) -> BaseException:
    """The exception a failed outcome stands for."""
    payload, error, failure = outcome.payload, outcome.error, outcome.failure
    if failure == TIMED_OUT:
        return TaskTimeout(error)
    if failure == CANCELLED:
        return TaskCancelled(error)
    if failure == LOST_INPUT:
        return ValueLost(error)
    if failure or not payload:
        return TaskFailed(error)
    try:
        exc = cloudpickle.loads(payload)
    except Exception as load_error:
        return TaskFailed(f"the task raised an exception that cannot be unpickled here ({load_error!r}):\n{error}")
    if not isinstance(exc, BaseException):
        return TaskFailed(f"the task's failure payload is not an exception:\n{error}")
    exc.__cause__ = RemoteTraceback(error)
    return exc
