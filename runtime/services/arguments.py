"""Checks of a service's constructor arguments, shared by the classes that take the same kinds of settings.

Error handling: each raises ValueError naming the first argument that is not what it must be, with its value.
"""

from __future__ import annotations


def check_flags(**flags: object) -> None:
    """Every keyword argument is a bool (an int such as 1 is not: a flag given a count is a caller's mistake)."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be a bool, got {value!r}")


def check_counts(**counts: object) -> None:
    """Every keyword argument is an int >= 1."""
    for name, value in counts.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
