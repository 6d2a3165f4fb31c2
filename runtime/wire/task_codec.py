"""How tasks and their outcomes travel: cloudpickled callables in, pickled results or exceptions out.

A task payload is `cloudpickle.dumps((fn, args, kwargs))`, a function pickled by value in it once for many tasks
(shipped.py). Running it yields an `Outcome`
(messages.py): ok with the pickled return value, or not ok with the pickled exception (empty if it
cannot be pickled) and the formatted remote traceback in `error`. A failure that is not the task's
own exception (its process died, its node monitor was lost) has an empty payload, the reason in
`error` and its cause in `failure`.
"""

from __future__ import annotations

import pickle
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

import cloudpickle

from ..errors import RemoteTraceback, TaskCancelled, TaskFailed, TaskTimeout, ValueLost
from . import code_env
from .messages import CANCELLED, LOST_INPUT, TIMED_OUT, Outcome
from .shipped import set_task_user, shipped

# Results of these exact types pickle to the same bytes with the C pickler as with cloudpickle's
# Python-level Pickler, at a tenth of the cost (a no-op task's outcome is one of them).
_PLAIN_TYPES = frozenset((type(None), bool, int, float, str, bytes))


def pack_task(fn: Callable[..., object], args: tuple = (), kwargs: dict | None = None) -> bytes:
    """Serialise a call of `fn`; raises TypeError naming `fn` if it cannot be pickled.

    A function that cloudpickle pickles by value (from `__main__`, a lambda, a nested function) is pickled once
    and its bytes reused while what it reads is unchanged, and the worker unpickles it once (shipped.py). A
    callable that cloudpickle would pickle by reference (importable by its module and name, in no module
    registered to be pickled by value) called with plain arguments is pickled by the C pickler: the same bytes,
    at about 60% of the cost (the caller's thread pays it once per task)."""
    if not callable(fn):
        raise TypeError(f"a task must be callable, got {type(fn).__name__}")
    plain = _plain(args) and _plain(kwargs or {})
    try:
        if type(fn) is types.FunctionType and not _by_reference(fn):
            call: tuple = (shipped(fn), args, kwargs or {})  # pickled by value once (shipped.py)
            return pickle.dumps(call, cloudpickle.DEFAULT_PROTOCOL) if plain else cloudpickle.dumps(call)
        call = (fn, args, kwargs or {})
        if plain and _by_reference(fn):
            return pickle.dumps(call, cloudpickle.DEFAULT_PROTOCOL)
        return cloudpickle.dumps(call)
    except Exception as exc:
        raise TypeError(f"task {fn!r} cannot be pickled: {exc}") from exc


def _plain(values: tuple | dict) -> bool:
    """Whether `values` (a call's arguments) are all of the exact plain types, a dict's keys str."""
    if type(values) is dict:
        return all(type(k) is str for k in values) and all(type(v) in _PLAIN_TYPES for v in values.values())
    return all(type(v) in _PLAIN_TYPES for v in values)


def _by_reference(fn: Any) -> bool:
    """Whether cloudpickle would pickle `fn` by reference, as the C pickler does: a module-level builtin
    function, or a function or class that is its module's attribute of its qualified name, in a module
    that is imported, not `__main__` and not registered to be pickled by value (nor is its package)."""
    kind = type(fn)
    module_name: object
    if kind is types.BuiltinFunctionType:
        owner = fn.__self__
        if type(owner) is not types.ModuleType:
            return False  # a bound method of an object
        module_name = owner.__name__
    elif kind is types.FunctionType or isinstance(fn, type):
        module_name = getattr(fn, "__module__", None)
    else:
        return False
    if not isinstance(module_name, str) or module_name == "__main__":
        return False
    found: object = sys.modules.get(module_name)
    for part in fn.__qualname__.split("."):  # "<locals>" and "<lambda>" are nobody's attribute
        found = getattr(found, part, None)
    if found is not fn:
        return False
    by_value = cloudpickle.list_registry_pickle_by_value()
    return not by_value or not any(module_name == name or module_name.startswith(name + ".") for name in by_value)


def run_task(
    payload: bytes, inputs: list | None = None, keep: Callable[[Any], Outcome] | None = None, user: str = ""
) -> Outcome:
    """Run a packed task here, with `inputs` (if not None) as the call's last positional argument; never
    raises (every failure becomes a not-ok outcome). `keep(result) -> Outcome`, if given, makes the outcome
    of a result that is not of a plain type (a worker that can keep it in a memory file, data/packed.py).
    `user`: whose task it is (a function it ships is kept per user: shipped.py)."""
    try:
        if code_env.entered is not None:  # a task of a job that shipped code ran before: leave its code
            code_env.leave()
        set_task_user(user)
        fn, args, kwargs = cloudpickle.loads(payload)
        result = fn(*args, **kwargs) if inputs is None else fn(*args, inputs, **kwargs)
    except BaseException as exc:
        return _raised(exc)
    try:
        if type(result) in _PLAIN_TYPES:
            return Outcome(True, pickle.dumps(result, cloudpickle.DEFAULT_PROTOCOL))
        if keep is not None:
            return keep(result)
        return Outcome(True, cloudpickle.dumps(result))
    except BaseException as exc:  # SystemExit too: the outcome, as the process pool gives it (no dead worker)
        return _raised(exc, f"the task's result {type(result).__name__} could not be pickled:\n")


def _raised(exc: BaseException, context: str = "") -> Outcome:
    """The outcome of a task that raised `exc` (its traceback the error text, after `context`): its caller
    gets `exc` itself, or TaskFailed with that text if `exc` cannot be pickled."""
    tb = context + "".join(traceback.format_exception(exc))
    try:
        data = cloudpickle.dumps(exc)
    except Exception:
        data = b""
    return Outcome(False, data, tb)


def unpack_outcome(outcome: Outcome) -> Any:
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
