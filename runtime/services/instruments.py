"""Observers of a service, in the shape of trio's `_core/_instrumentation.py`: a list of instruments,
each hook called at one place; an instrument whose hook raises is removed and logged, and never takes
the service (or the connection whose batch it was observing) down."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class Instruments(list):
    """The instruments observing one thing (a JobTimer's observers): `call(hook, *args)` calls
    `instrument.hook(*args)` on each that has the hook, in order."""

    def call(self, hook: str, *args) -> None:
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
