"""How many settings and flags each command has: `--help` shows an operator's settings, `--help-all` the
research switches too, and the table of docs/cli.md ("How many settings") says so."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sparrow_runtime.cli.help_all import HELP_ALL
from sparrow_runtime.cli.main import build_parser
from sparrow_runtime.cli.options import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
HELP_FLAGS = {"--help", HELP_ALL}


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def counts(parser: argparse.ArgumentParser, command: str) -> tuple[int, int, int]:
    """(settings, flags `--help` shows, flags `--help-all` shows) of `sparrow COMMAND`; a boolean on by
    default has two flags (`--bind-idle`, `--no-bind-idle`)."""
    show_all = [a for a in parser._actions if a.option_strings == [HELP_ALL]]
    hidden = {id(action) for action, _ in show_all[0].hidden} if show_all else set()

    def flags(visible: bool) -> int:
        return sum(
            1
            for action in parser._actions
            if action.help != argparse.SUPPRESS or (not visible and id(action) in hidden)
            for flag in action.option_strings
            if flag.startswith("--") and flag not in HELP_FLAGS
        )

    return len(COMMANDS.get(command, ())), flags(True), flags(False)


def documented_counts() -> dict[str, tuple[int, int, int]]:
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("## How many settings", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `sparrow ([\w-]+)` \| (\d+) \| (\d+) \| (\d+) \|$", section, flags=re.M)
    return {name: (int(a), int(b), int(c)) for name, a, b, c in rows}


def test_the_guides_table_gives_each_commands_settings_and_flags():
    """docs/cli.md's table is what the parsers hold (a setting added, retired or moved to the research switches
    changes it)."""
    actual = {name: counts(parser, name) for name, parser in command_parsers().items()}
    assert documented_counts() == {name: c for name, c in actual.items() if c != (0, 0, 0)}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_shows_the_operators_settings_and_help_all_the_research_switches_too(command, capsys):
    parser = command_parsers()[command]
    for argv in (["--help"], [HELP_ALL]):
        if argv == [HELP_ALL] and not any(a.option_strings == [HELP_ALL] for a in parser._actions):
            continue
        with pytest.raises(SystemExit) as stop:
            build_parser(command).parse_args([command, *argv])
        assert stop.value.code == 0
        shown = capsys.readouterr().out
        for setting in COMMANDS[command]:
            listed = re.search(rf"(?<![\w-]){re.escape(setting.flag)}(?![\w-])", shown) is not None
            assert listed == (argv == [HELP_ALL] or setting.group == "operator"), setting.flag
        assert ("research switches (" in shown) == (argv == [HELP_ALL]), "the research group's heading"


def test_a_research_switch_is_read_like_any_other_setting():
    args = build_parser("scheduler").parse_args(["scheduler", "--probe-ratio", "1.5", "--no-bind-idle"])
    assert (args.probe_ratio, args.bind_idle) == ("1.5", "false")


if __name__ == "__main__":  # the table of docs/cli.md
    for name, parser in command_parsers().items():
        print(f"| `sparrow {name}` | " + " | ".join(map(str, counts(parser, name))) + " |")
