"""Burst (burst.py): what is sent while a hold is held leaves once the outermost hold ends, flushes in the order
registered, and an exception leaving the hold flushes all the same."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.burst import Burst


def test_nested_holds_flush_once_when_the_outermost_ends_in_the_order_registered() -> None:
    burst = Burst()
    calls: list[str] = []
    burst.on_release(lambda: calls.append("workers"))
    burst.on_release(lambda: calls.append("schedulers"))
    assert not burst.held
    with burst:
        with burst:
            assert burst.held
        assert burst.held and calls == []  # the inner hold's end sends nothing yet
    assert not burst.held and calls == ["workers", "schedulers"]


def test_an_exception_leaving_the_hold_still_flushes_and_releases_it() -> None:
    burst = Burst()
    calls: list[int] = []
    burst.on_release(lambda: calls.append(1))
    with pytest.raises(RuntimeError), burst:
        raise RuntimeError("a bug while routing")
    assert calls == [1] and not burst.held
