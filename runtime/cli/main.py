"""The `sparrow` command: one entry point, a subcommand per module of this package."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from sparrow_core._version import __version__

from .common import CommandError
from .config import ConfigError

# Each command's module defines `add_parser(subparsers)`, which registers the command and sets `func`
# on the parser's defaults to a callable taking the parsed namespace and returning an exit code.
SUBCOMMAND_MODULES = {
    "local": "local",
    "submit": "submit",
    "status": "status",
    "tasks": "tasks",
    "scheduler": "scheduler",
    "node-monitor": "node_monitor",
    "simulate": "simulate",
    "experiment": "experiment",
    "certs": "certs",
}


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one line ("sparrow local: error: ..."), exit status 2. Long flags must be
    spelled out: `--task 3` is an error, not `--tasks 3` (this parser and every command's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of `command` if it names one (a service then starts
    without importing what the other commands need)."""
    parser = OneLineErrorParser(
        prog="sparrow",
        description="Sparrow: decentralized, randomized low-latency task scheduling.",
    )
    parser.add_argument("--version", action="version", version=f"sparrow {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = [SUBCOMMAND_MODULES[command]] if command in SUBCOMMAND_MODULES else SUBCOMMAND_MODULES.values()
    for name in modules:
        importlib.import_module(f"sparrow_runtime.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"sparrow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (CommandError, RuntimeError) as exc:
        print(f"sparrow {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
