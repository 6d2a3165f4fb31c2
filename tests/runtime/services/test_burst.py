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


def test_settle_hooks_run_as_the_outermost_hold_ends_still_held_before_the_flushes() -> None:
    """Work put off to the end of a burst (a node monitor's outcomes of one read) runs once, as the outermost hold
    ends, while still held: what it sends joins the burst and leaves with the flushes that follow."""
    burst = Burst()
    calls: list[str] = []
    burst.on_release(lambda: calls.append("flush"))
    burst.on_settle(lambda: calls.append(f"settle held={burst.held}"))
    with burst:
        with burst:
            pass
        assert calls == []  # the inner hold's end settles nothing
    assert calls == ["settle held=True", "flush"] and not burst.held

    def holds_again() -> None:  # as a node monitor's report does, routing under the same burst
        with burst:
            calls.append("inner")

    burst.on_settle(holds_again)
    with burst:
        pass
    assert calls[2:] == ["settle held=True", "inner", "flush"]  # the inner hold did not end the burst early


def test_a_settle_hook_that_raises_still_flushes_and_releases_the_hold() -> None:
    burst = Burst()
    calls: list[int] = []
    burst.on_release(lambda: calls.append(1))

    def settle() -> None:
        raise RuntimeError("a bug while reporting")

    burst.on_settle(settle)
    with pytest.raises(RuntimeError), burst:
        pass
    assert calls == [1] and not burst.held
