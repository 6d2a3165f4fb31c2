"""The order CI runs the test files in (tests/conftest.py's SLOWEST_FILES, .ci/run's xdist options): every
listed file exists, the listed files come first in their listed order, and .ci/run keeps that order."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class _Item:
    nodeid: str


def test_every_slowest_file_is_a_test_file_listed_once() -> None:
    """A renamed or deleted file would silently fall back to the end of the run: each entry must exist."""
    assert len(set(conftest.SLOWEST_FILES)) == len(conftest.SLOWEST_FILES)
    missing = [path for path in conftest.SLOWEST_FILES if not (ROOT / path).is_file()]
    assert missing == []
    assert all(Path(path).name.startswith("test_") for path in conftest.SLOWEST_FILES)


def test_collection_puts_the_slowest_files_first_and_keeps_each_files_order() -> None:
    """The listed files move to the front in the listed order; the others, and each file's tests, keep theirs."""
    first, second = conftest.SLOWEST_FILES[:2]
    items = [
        _Item("tests/a/test_x.py::test_1"),
        _Item(f"{second}::test_b[1]"),
        _Item(f"{second}::test_b[2]"),
        _Item("tests/a/test_y.py::test_2"),
        _Item(f"{first}::test_a"),
        _Item("tests/a/test_x.py::test_3"),
    ]
    conftest.pytest_collection_modifyitems(items)
    assert [item.nodeid for item in items] == [
        f"{first}::test_a",
        f"{second}::test_b[1]",
        f"{second}::test_b[2]",
        "tests/a/test_x.py::test_1",
        "tests/a/test_y.py::test_2",
        "tests/a/test_x.py::test_3",
    ]


def test_ci_hands_out_whole_files_in_collection_order() -> None:
    """.ci/run's pytest line distributes by file and turns off xdist's reordering (most tests first)."""
    line = next(line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "-m pytest" in line)
    words = shlex.split(line)
    assert words[words.index("--dist") + 1] == "loadfile"
    assert "--no-loadscope-reorder" in words
