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


def test_cancellation_and_other_base_exceptions_pass_through():
    """Only an Exception is contained: a cancellation (trio.Cancelled is a BaseException) or a KeyboardInterrupt
    ends what it ends."""
    with pytest.raises(KeyboardInterrupt), contained(logger, "x"):
        raise KeyboardInterrupt


def test_the_traceback_is_logged_at_debug_level_only(caplog):
    with caplog.at_level(logging.ERROR, logger.name), contained(logger, "x"):
        raise ValueError("quiet")
    assert caplog.records[-1].exc_info is None
    with caplog.at_level(logging.DEBUG, logger.name), contained(logger, "x"):
        raise ValueError("loud")
    exc_info = caplog.records[-1].exc_info
    assert exc_info is not None and isinstance(exc_info[1], ValueError) and str(exc_info[1]) == "loud"
