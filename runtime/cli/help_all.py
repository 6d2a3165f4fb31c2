"""`--help` shows an operator's settings; `--help-all` shows the research switches too (the settings of
group RESEARCH, config.py), which are read like any other whichever help shows them."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

HELP_ALL = "--help-all"


class _ShowAll(argparse.Action):
    """Gives the hidden actions back their help, prints the whole help and exits."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kwargs)
        self.hidden: list[tuple[argparse.Action, str | None]] = []

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        for action, text in self.hidden:
            action.help = text
        parser.print_help()
        parser.exit()


def hide_until_help_all(parser: argparse.ArgumentParser, actions: Iterable[argparse.Action]) -> None:
    """Leave `actions` out of `--help`; add `--help-all`, which shows them too."""
    show = parser.add_argument(
        HELP_ALL, action=_ShowAll, help="show the research switches too (the experiments' settings), and exit"
    )
    assert isinstance(show, _ShowAll)
    for action in actions:
        show.hidden.append((action, action.help))
        action.help = argparse.SUPPRESS
