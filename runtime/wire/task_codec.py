"""How tasks and their outcomes travel: cloudpickled callables in, pickled results or exceptions out.

A task payload is a pickle (protocol 5) of `(fn, args, kwargs)`, as cloudpickle makes it, a function pickled by value
in it once for many tasks (shipped.py; TaskPacker puts its opcodes in front of each task's arguments). Running it
yields an `Outcome` (messages.py): ok with the pickled return value, or not ok with the pickled exception (empty if it
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
from .shipped import Shipped, set_task_user, shipped

# Results of these exact types pickle to the same bytes with the C pickler as with cloudpickle's
# Python-level Pickler, at a tenth of the cost (a no-op task's outcome is one of them).
_PLAIN_TYPES = frozenset((type(None), bool, int, float, str, bytes))
PROTOCOL = cloudpickle.DEFAULT_PROTOCOL  # 5, as cloudpickle.dumps: the protocol of every payload
_FRAME, _NONE, _STOP = pickle.FRAME[0], pickle.NONE[0], pickle.STOP[0]


def pack_task(fn: Callable[..., object], args: tuple = (), kwargs: dict | None = None) -> bytes:
    """Serialise a call of `fn`; raises TypeError naming `fn` if it cannot be pickled (TaskPacker's bytes)."""
    return TaskPacker(fn).pack(args, kwargs)


class TaskPacker:
    """Packs calls of one callable, what depends on the callable alone decided once (per job: a map's chunk, a
    `submit_many`, a `submit`), so each task pays for its arguments only.

    A function that cloudpickle pickles by value (from `__main__`, a lambda, a nested function) is pickled once and
    its bytes reused while what it reads is unchanged, and the worker unpickles it once (shipped.py: checked when the
    packer is made, so a global rebound is seen from the next job on). Its pickle opcodes are put in front of each
    call's pickled arguments (`_splice`), not pickled again per task. A callable that cloudpickle would pickle by
    reference (importable by its module and name, in no module registered to be pickled by value) called with plain
    arguments is pickled by the C pickler: the same bytes, at about 60% of the cost; the opcodes it writes for the
    callable are spliced in the same way where the arguments cannot refer back to the memo (still the same bytes:
    a packed `int` call 2.2 -> 1.0 us).

    Error handling: TypeError for something not callable, or naming `fn` if it cannot be pickled."""

    __slots__ = ("_by_reference", "_opcodes", "_shipped", "fn")

    def __init__(self, fn: Callable[..., object]) -> None:
        if not callable(fn):
            raise TypeError(f"a task must be callable, got {type(fn).__name__}")
        self.fn = fn
        self._shipped: Shipped | None = None
        self._opcodes = b""  # what pushes the callable, put in front of each call's pickled arguments (_splice)
        self._by_reference = False
        if type(fn) is types.FunctionType and not _by_reference(fn):
            try:
                self._shipped = shipped(fn)  # pickled by value once (shipped.py)
            except Exception as exc:
                raise TypeError(f"task {fn!r} cannot be pickled: {exc}") from exc
            self._opcodes = self._shipped.opcodes()
        else:
            self._by_reference = _by_reference(fn)
            if self._by_reference:
                self._opcodes = _global_opcodes(fn)

    def pack(self, args: tuple = (), kwargs: dict | None = None) -> bytes:
        """The payload of a call of this packer's callable with `args` and `kwargs`."""
        if not kwargs:
            kwargs = {}
            plain = _plain(args)
        else:
            plain = _plain(args) and _plain_kwargs(kwargs)
        try:
            fn = self._shipped
            if fn is not None:
                stand_in = (None, args, kwargs)
                rest = pickle.dumps(stand_in, PROTOCOL) if plain else cloudpickle.dumps(stand_in)
                payload = _splice(self._opcodes, rest)
                if payload is not None:
                    return payload
                call: tuple = (fn, args, kwargs)
                return pickle.dumps(call, PROTOCOL) if plain else cloudpickle.dumps(call)
            call = (self.fn, args, kwargs)
            if plain and self._by_reference:
                if self._opcodes and not kwargs and _refers_back_to_nothing(args):  # the same bytes, spliced
                    payload = _splice(self._opcodes, pickle.dumps((None, args, kwargs), PROTOCOL))
                    if payload is not None:
                        return payload
                return pickle.dumps(call, PROTOCOL)
            return cloudpickle.dumps(call)
        except Exception as exc:
            raise TypeError(f"task {self.fn!r} cannot be pickled: {exc}") from exc


def _splice(opcodes: bytes, rest: bytes) -> bytes | None:
    """The pickle of `(x, args, kwargs)` out of `rest`, the pickle (protocol 5) of `(None, args, kwargs)`, and
    `opcodes`, which push x: `rest` with `opcodes` in place of the NONE opcode that opens it (just after its PROTO,
    and in its first frame if it has one). Right when nothing in `rest` refers back to the memo (the opcodes of a
    shipped function make no memo entry; those of a global do, and the caller checks that the arguments cannot
    refer back), and then the very bytes the pickler makes of the whole call when `opcodes` are the ones it
    writes for x. None if `rest` does not start so (then the caller pickles the call whole)."""
    if rest[1] < 4:  # no STACK_GLOBAL, no framing
        return None
    if rest[2] == _FRAME:
        if rest[11] != _NONE:
            return None
        size = int.from_bytes(rest[3:11], "little") - 1 + len(opcodes)
        return b"".join((rest[:3], size.to_bytes(8, "little"), opcodes, rest[12:]))
    if rest[2] != _NONE:
        return None
    return b"".join((rest[:2], opcodes, rest[3:]))


def _global_opcodes(fn: Any) -> bytes:
    """The opcodes the C pickler writes for `fn` by reference (its module and qualified name, memoized), as they
    open the pickle of a call of it; b"" if its pickle is not one frame of them."""
    try:
        out = pickle.dumps(fn, PROTOCOL)
    except Exception:
        return b""  # pack pickles the call whole, and says why it cannot
    if len(out) > 12 and out[2] == _FRAME and int.from_bytes(out[3:11], "little") == len(out) - 11 and out[-1] == _STOP:
        return out[11:-1]
    return b""


def _refers_back_to_nothing(args: tuple) -> bool:
    """Whether the pickle of plain `args` cannot refer back to an object pickled before it: at most one of them is
    a str or bytes, the only plain types the pickler memoizes (the same object twice is pickled once, then
    referred back to, and a global's opcodes make memo entries that would shift such a reference)."""
    seen = 0
    for value in args:
        kind = type(value)
        if kind is str or kind is bytes:
            seen += 1
    return seen < 2


def _plain(values: tuple) -> bool:
    """Whether `values` (a call's positional arguments) are all of the exact plain types."""
    for value in values:  # noqa: SIM110 (once per task: a loop makes no generator, as all() would)
        if type(value) not in _PLAIN_TYPES:
            return False
    return True


def _plain_kwargs(values: dict) -> bool:
    """Whether `values` (a call's keyword arguments) are all of the exact plain types, their keys str."""
    for key, value in values.items():  # noqa: SIM110 (as _plain)
        if type(key) is not str or type(value) not in _PLAIN_TYPES:
            return False
    return True


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
            return Outcome(True, pickle.dumps(result, PROTOCOL))
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
