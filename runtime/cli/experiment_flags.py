"""Flag types of the `sparrow experiment` commands: read as the other commands' settings are (config.py)."""

from __future__ import annotations

import argparse

from .config import Kind, integer, number


def flag(kind: Kind):
    """An argparse type that reads a flag as the other commands' settings do (config.py's kinds)."""

    def convert(text: str):
        try:
            return kind.from_text(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


POSITIVE_INT = flag(integer(1))
POSITIVE_NUMBER = flag(number(0.0, open_low=True))
