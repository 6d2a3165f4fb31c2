"""The `sparrow` command: one entry point, a subcommand per module of this package."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module named here defines `add_parser(subparsers)`, which registers its subcommand and sets
# `func` on the parser's defaults to a callable taking the parsed namespace and returning an exit code.
SUBCOMMAND_MODULES = ("simulate",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparrow",
        description="Sparrow: decentralized, randomized low-latency task scheduling.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"sparrow_runtime.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
