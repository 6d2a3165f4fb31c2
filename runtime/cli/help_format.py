"""The --help of commands whose flags are not settings (`sparrow simulate`, `sparrow experiment`):
every flag's help ends with its default, as the settings' do (config.py)."""

from __future__ import annotations

import argparse


class DefaultsShown(argparse.HelpFormatter):
    """Every flag's help ends with its default ("none" / "off" where it is unset)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or action.default is argparse.SUPPRESS:
            return text
        shown = "none" if action.default is None else "off" if action.default is False else "%(default)s"
        return f"{text} (default: {shown})"
