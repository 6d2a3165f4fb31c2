"""Tasks that take other tasks' results: finding those inputs in a call's arguments.

Inputs are found, as Dask's `Client.submit` finds futures, anywhere in the positional and keyword
arguments, nested in lists, tuples, sets and dicts (their values) of exactly those types; other
objects (a namedtuple, a dataclass) are left as they are. A dependent task travels as
`call_with_inputs(template, inputs)` (data/dependent.py): `template` is the pickled `(fn, args, kwargs)`
with each input replaced by a `Slot`, `inputs` the pickled values or references to them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..data.dependent import CONTAINERS, Slot
from ..data.dependent import pack_dependent as pack_dependent
from ..wire.task_codec import pack_task

SCALARS = frozenset((type(None), bool, int, float, complex, str, bytes))  # never an input, never holding one


class Inputs:
    """The inputs found in one call's arguments: `keys` (each once, in order of first appearance) and
    `paths` (where each first appears, e.g. "args[0]", "kwargs['x'][2]"), with the arguments in which
    each input is a `Slot`."""

    __slots__ = ("args", "keys", "kwargs", "paths")

    def __init__(self) -> None:
        self.keys: list[Any] = []  # what is_input found; its owner may rename them (the logic's: (Job, task))
        self.paths: list[str] = []
        self.args: tuple = ()
        self.kwargs: dict = {}


def find_inputs(args: tuple, kwargs: dict, is_input: Callable[[object], bool]) -> Inputs | None:
    """The inputs (hashable objects for which `is_input` is true) in `args` and `kwargs`, or None if
    there are none. Equal inputs are one input."""
    if not kwargs and all(type(a) in SCALARS for a in args):
        return None  # the common call, f(1, "x"): nothing to walk
    found = Inputs()
    index: dict[Hashable, int] = {}  # input -> its slot

    def walk(obj: Any, path: str) -> Any:
        if is_input(obj):
            slot = index.get(obj)
            if slot is None:
                slot = index[obj] = len(found.keys)
                found.keys.append(obj)
                found.paths.append(path)
            return Slot(slot)
        kind = type(obj)
        if kind is dict:
            return {k: walk(v, f"{path}[{k!r}]") for k, v in obj.items()}
        if kind in CONTAINERS:
            items = [walk(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            return kind(items)
        return obj

    found.args = tuple(walk(a, f"args[{i}]") for i, a in enumerate(args))
    found.kwargs = {k: walk(v, f"kwargs[{k!r}]") for k, v in kwargs.items()}
    return found if found.keys else None


def pack_template(fn: Callable[..., object], inputs: Inputs) -> bytes:
    """The pickled call of `fn` with its inputs as Slots; TypeError naming `fn` if it cannot be pickled."""
    return pack_task(fn, inputs.args, inputs.kwargs)
