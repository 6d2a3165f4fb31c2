"""Containment: an exception raised while serving one connection ends that connection only.

`contained` wraps the handling of one connection (or link) in a service. Whatever it raises (a bug,
an encoding error, anything but cancellation and a deliberate ServiceStop) is logged as one line
naming the connection, with peer-supplied text cut short, and swallowed: the service keeps
serving everyone else. The traceback is logged at debug level. `sole_error` unwraps the groups of
one exception that nurseries wrap an error in.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from types import TracebackType

from ..errors import ServiceStop
from .limits import MAX_REASON, clip

if sys.version_info < (3, 11):  # pragma: no cover - trio installs the backport there
    from exceptiongroup import BaseExceptionGroup


class contained:
    """Run the body; log and swallow any Exception it raises except ServiceStop. `what` names what
    failed in the log line: a str, or a callable that makes it only then (a hot path's: a peer's
    repr per task costs more than the rest of the guard). A class, not a generator: a node monitor
    enters one per task's outcome, and the generator's context manager cost 3x as much."""

    __slots__ = ("_logger", "_what")

    def __init__(self, logger: logging.Logger, what: str | Callable[[], str]) -> None:
        self._logger = logger
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, ServiceStop):
            return False
        what = self._what
        log_contained(self._logger, what if isinstance(what, str) else what(), exc)
        return True


def log_contained(logger: logging.Logger, what: str, exc: Exception) -> None:
    """Log `exc`, raised by `what` and swallowed, as `contained` does. For a hot path that contains by hand
    (`try:` ... `except ServiceStop: raise` / `except Exception as exc: log_contained(...)`): a try costs nothing
    until something is raised, the guard an object per pass."""
    leaf = sole_error(exc)
    logger.error(
        "%s failed and was closed: %s: %s",
        what,
        type(leaf).__name__,
        clip(str(leaf), MAX_REASON),
        exc_info=exc if logger.isEnabledFor(logging.DEBUG) else None,
    )


def sole_error(exc: BaseException) -> BaseException:
    """`exc`, or the one exception inside it if it is a group (nested) of exactly one."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:  # a nursery's wrapping
        exc = exc.exceptions[0]
    return exc
