"""Functions shipped by value, pickled once and unpickled once: what a task of a function from the user's own script
(`__main__`, a lambda, a nested function) costs after its first call.

cloudpickle pickles such a function by value (its code, the globals it reads, its defaults and closure), which costs
tens of microseconds per task at both ends, where a process pool's children import it by name. Here:

- The sender (the user's own process) keeps the pickled function per function object (`shipped`), at most
  SENDER_FUNCTIONS of them, least recently used out; a task's payload then carries those bytes as they are. An entry
  is used only while the function's code, defaults, keyword defaults, closure cells and the globals its code names are
  the very objects it was pickled with: a rebound global (`x = 6`) or a redefined function pickles afresh, from the
  next job on (the client checks once per job: task_codec.TaskPacker). A global changed in place (a list appended
  to) is not seen, as a process pool's children do not see it either.
- The receiver keeps the function unpickled per user and content (`load_shipped`, keyed by the task's user and the
  bytes themselves: a task gets the function of its own bytes, unpickled for its own user), at most
  RECEIVER_FUNCTIONS of them and RECEIVER_BYTES in all, least recently used out. A worker process serves one user
  (services/idle_workers.py); a thread executor, every user's, so it names the user of each task (`set_task_user`).
"""

from __future__ import annotations

import functools
import operator
import pickle
import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import cloudpickle

SENDER_FUNCTIONS = 128
SENDER_BYTES = 64 * 2**20  # a function pickled larger than this (a closure over big data) is not kept
RECEIVER_FUNCTIONS = 256
RECEIVER_BYTES = 64 * 2**20
_MISSING = object()


class Shipped:
    """A function pickled by value: pickles as a call of `load_shipped` with its bytes (the C pickler copies them)."""

    __slots__ = ("_opcodes", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._opcodes: bytes | None = None

    def __reduce__(self) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
        return load_shipped, (self.data,)

    def opcodes(self) -> bytes:
        """The pickle opcodes (protocol 4 and later) that push what this object unpickles to, `load_shipped(data)`,
        and make no memo entry: they can stand in place of an object in a pickle without shifting the memo indexes
        of what follows (task_codec.TaskPacker puts them in front of each task's arguments: pickling this object
        itself costs the C pickler a Python-level `__reduce__` and a look-up of `load_shipped`, per task)."""
        if self._opcodes is None:
            module, name = _short_str(load_shipped.__module__), _short_str(load_shipped.__qualname__)
            size = _bytes_opcode(len(self.data))
            self._opcodes = b"".join((module, name, pickle.STACK_GLOBAL, size, self.data, pickle.TUPLE1, pickle.REDUCE))
        return self._opcodes


def _short_str(text: str) -> bytes:
    """The SHORT_BINUNICODE opcode of `text` (under 256 bytes in UTF-8)."""
    data = text.encode()
    assert len(data) < 256, text
    return pickle.SHORT_BINUNICODE + bytes((len(data),)) + data


def _bytes_opcode(size: int) -> bytes:
    """The opcode, with its length, that pushes the `size` bytes after it as a bytes object."""
    if size < 256:
        return pickle.SHORT_BINBYTES + bytes((size,))
    if size < 2**32:
        return pickle.BINBYTES + size.to_bytes(4, "little")
    return pickle.BINBYTES8 + size.to_bytes(8, "little")


_sent: OrderedDict[types.FunctionType, tuple[tuple, Shipped]] = OrderedDict()  # fn -> (what it read, its pickle)
_sent_lock = threading.Lock()  # a user's threads submit at once


def shipped(fn: types.FunctionType) -> Shipped:
    """`fn` pickled by value, from the sender's cache while what it reads is unchanged; raises what cloudpickle
    raises."""
    reads = _reads(fn)
    with _sent_lock:
        entry = _sent.get(fn)
        if entry is not None and _same(entry[0], reads):
            _sent.move_to_end(fn)
            return entry[1]
    found = Shipped(cloudpickle.dumps(fn))
    if len(found.data) <= SENDER_BYTES:
        with _sent_lock:
            _sent[fn] = (reads, found)
            _sent.move_to_end(fn)
            if len(_sent) > SENDER_FUNCTIONS:
                _sent.popitem(last=False)
    return found


def _reads(fn: types.FunctionType) -> tuple:
    """The objects `fn`'s pickle depends on besides its code's constants, flat: its code, defaults and keyword
    defaults, its closure cells' contents and the globals its code names (as many as its code says: missing ones as
    the name's absence), then its attributes' names and values."""
    module_globals = fn.__globals__
    cells = () if fn.__closure__ is None else tuple(map(_cell_contents, fn.__closure__))
    named = tuple(module_globals.get(name, _MISSING) for name in _global_names(fn.__code__))
    attributes = tuple(item for pair in fn.__dict__.items() for item in pair) if fn.__dict__ else ()
    return (fn.__code__, fn.__defaults__, fn.__kwdefaults__, *cells, *named, *attributes)


def _cell_contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell (a name the function's scope has not bound yet)
        return _MISSING


@functools.lru_cache(maxsize=4 * SENDER_FUNCTIONS)
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name `code` and the code nested in it (comprehensions, inner functions) look up (a superset of the
    globals they read: attribute names too)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_global_names(const))
    return tuple(sorted(names))


def _same(kept: tuple, now: tuple) -> bool:
    """Whether two `_reads` are of the very same objects (identity: an equal but new object may pickle differently)."""
    return len(kept) == len(now) and all(map(operator.is_, kept, now))


_loaded: OrderedDict[tuple[str, bytes], Any] = OrderedDict()  # (user, a function's pickle) -> the function
_loaded_bytes = 0
_loaded_lock = threading.Lock()  # a thread executor runs tasks at once
_running = threading.local()  # the user whose task this thread unpickles now (set_task_user)


def set_task_user(user: str) -> None:
    """The tasks this thread unpickles next are `user`'s: the functions they ship are kept apart from other
    users' (a thread executor runs every user's tasks in one process; a worker process serves one user)."""
    _running.user = user


def task_user() -> str:
    """The user `set_task_user` named last in this thread ("" if none)."""
    return getattr(_running, "user", "")


def load_shipped(data: bytes) -> Any:
    """The function pickled as `data`, unpickled once per user and content while among the recently used."""
    global _loaded_bytes
    key = (getattr(_running, "user", ""), data)
    with _loaded_lock:
        fn = _loaded.get(key, _MISSING)
        if fn is not _MISSING:
            _loaded.move_to_end(key)
            return fn
    fn = cloudpickle.loads(data)
    if len(data) <= RECEIVER_BYTES:
        with _loaded_lock:
            if key not in _loaded:
                _loaded_bytes += len(data)
            _loaded[key] = fn
            while len(_loaded) > RECEIVER_FUNCTIONS or _loaded_bytes > RECEIVER_BYTES:
                (_, gone), _ = _loaded.popitem(last=False)
                _loaded_bytes -= len(gone)
    return fn
