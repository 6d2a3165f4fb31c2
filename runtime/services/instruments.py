"""Observers of a service, in the shape of trio's `_core/_instrumentation.py`: a list of instruments,
each hook called at one place; an instrument whose hook raises is removed and logged, and never takes
the service (or the connection whose batch it was observing) down. `observed(logic class)` makes that
one place for a logic: every step of it (each `on_*` method) tells the instruments what it took and
returned, so a step added to the logic later is observed too."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Instruments(list):
    """The instruments observing one thing (a JobTimer's observers): `call(hook, *args)` calls
    `instrument.hook(*args)` on each that has the hook, in order."""

    def call(self, hook: str, *args: object) -> None:
        for instrument in list(self):
            method = getattr(instrument, hook, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception:
                if instrument in self:
                    self.remove(instrument)
                logger.exception("instrument %r raised in %s and was removed", instrument, hook)


def steps(cls: type, also: tuple[str, ...] = ()) -> list[str]:
    """The steps of a logic class: its public methods named `on_*`, and those in `also`."""
    return sorted(
        name for name in dir(cls) if (name.startswith("on_") or name in also) and callable(getattr(cls, name))
    )


def observed(cls: type[T], also: tuple[str, ...] = ()) -> type[T]:
    """A subclass of the logic class `cls` whose every step (`steps(cls, also)`: a method added to the
    logic later is one too, with nothing to change here) passes through one chokepoint: after the
    step returns `out`, `self.instruments.call("step", name, args, out)`. Nothing else is changed."""

    def chokepoint(name: str, method: Callable) -> Callable:
        def step(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = method(self, *args, **kwargs)
            self.instruments.call("step", name, args, out)
            return out

        step.__name__, step.__qualname__, step.__doc__ = name, f"Observed{cls.__name__}.{name}", method.__doc__
        return step

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)
        self.instruments = Instruments()

    namespace: dict[str, Any] = {name: chokepoint(name, getattr(cls, name)) for name in steps(cls, also)}
    namespace["__init__"] = __init__
    namespace["__doc__"] = f"{cls.__name__} with instruments (`instruments`) told of every step it takes."
    return type(f"Observed{cls.__name__}", (cls,), namespace)
