"""contained: what a service's guard logs, and that a hot path's description costs nothing until needed."""

from __future__ import annotations

import logging

import pytest

from sparrow_runtime.errors import ServiceStop
from sparrow_runtime.wire.guard import contained

logger = logging.getLogger("test_guard")


def test_a_failure_is_logged_in_one_line_naming_what_failed_and_swallowed(caplog):
    """The body's exception ends only the guarded part: one error line names it and the exception."""
    with caplog.at_level(logging.ERROR, logger.name), contained(logger, "serving peer x"):
        raise ValueError("bad\nframe")
    (record,) = caplog.records
    assert record.getMessage() == "serving peer x failed and was closed: ValueError: bad\\nframe"


def test_a_callable_description_is_made_only_when_the_body_fails(caplog):
    """A hot path passes a callable: it is not called while all goes well, and names the failure."""
    calls = []

    def what() -> str:
        calls.append(1)
        return "reporting task 3 of job 7"

    with contained(logger, what):
        pass
    assert calls == []
    with caplog.at_level(logging.ERROR, logger.name), contained(logger, what):
        raise KeyError(3)
    assert calls == [1]
    assert caplog.records[0].getMessage() == "reporting task 3 of job 7 failed and was closed: KeyError: 3"


def test_a_service_stop_passes_through():
    """ServiceStop is deliberate: the guard does not swallow it."""
    with pytest.raises(ServiceStop), contained(logger, lambda: "never made"):
        raise ServiceStop("stop")
