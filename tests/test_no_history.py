"""Code and user docs state the current rule and why, not its history: no "session N", "issue N" or
commit hash in them. History belongs in CHANGELOG.md and commit messages, dated measurements in
docs/results/ (the allowed set below)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# what is scanned: the code (and its tests and benchmarks) and the docs a user reads
CODE = ("runtime", "sparrow_core", "csrc", "bench", "tests")
USER_DOCS = ("README.md", "CONTRIBUTING.md", "mkdocs.yml", "docs")
SUFFIXES = {".py", ".pyi", ".pyx", ".pxd", ".h", ".hpp", ".cpp", ".cc", ".md", ".toml", ".yml", ".yaml", ".txt"}
SKIPPED_DIRS = {"__pycache__", ".asv", "build", "site"}
# where history and dated figures belong; this file, whose examples below are history mentions on purpose; and
# the standard library's tests, vendored as written (their comments name the CPython issues they check)
ALLOWED = ("CHANGELOG.md", "docs/results/", "tests/test_no_history.py", "tests/conformance/cpython/")

MENTIONS = {
    "session N": re.compile(r"\bsessions?\s+\d+", re.IGNORECASE),
    "issue N": re.compile(r"\b(?:issues?|PR)\s+#?\d+", re.IGNORECASE),
    # a commit named as such, or a bare short hash: 7 to 12 hex digits with a letter and a digit, a word of
    # its own (a digest in quotes, a hex literal or a longer hex string is not one)
    "commit hash": re.compile(
        r"\bcommit\s+[0-9a-f]{7,40}\b"
        r"|(?<![\w'\"./#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![\w'\"-])"
    ),
}


def _scanned() -> list[Path]:
    files: list[Path] = []
    for name in (*CODE, *USER_DOCS):
        top = ROOT / name
        if top.is_file():
            files.append(top)
        elif top.is_dir():
            for path in sorted(top.rglob("*")):
                parts = set(path.relative_to(ROOT).parts)
                if path.is_file() and path.suffix in SUFFIXES and not parts & SKIPPED_DIRS:
                    files.append(path)
    return [p for p in files if not p.relative_to(ROOT).as_posix().startswith(ALLOWED)]


def history_mentions(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, the text matched) of each mention of history in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for kind, pattern in MENTIONS.items():
            found += [(number, kind, m.group(0)) for m in pattern.finditer(line)]
    return found


def test_code_and_user_docs_name_no_session_issue_or_commit() -> None:
    """Every scanned file is free of "session N", "issue N" and commit hashes; a failure lists each one."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {kind}: {text!r}"
        for path in _scanned()
        for number, kind, text in history_mentions(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not offenders, "history in code or user docs (move it to CHANGELOG.md or docs/results/):\n" + "\n".join(
        offenders
    )


def test_the_scan_covers_code_tests_and_guides() -> None:
    """The scan reads the packages, the tests, the benchmarks, the C++ and the guides, and skips the allowed set."""
    scanned = {p.relative_to(ROOT).as_posix() for p in _scanned()}
    for expected in ("runtime/__init__.py", "sparrow_core/__init__.py", "README.md", "docs/index.md"):
        assert expected in scanned
    assert any(p.startswith("csrc/") for p in scanned) and any(p.startswith("bench/") for p in scanned)
    assert not any(p.startswith(ALLOWED) for p in scanned)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("as measured in session 12", ["session N"]),
        ("sessions 7-11 ran mix A", ["session N"]),
        ("Issue 18 asks for it", ["issue N"]),
        ("see issue #21", ["issue N"]),
        ("fixed in 75a9f96", ["commit hash"]),
        ("before commit e0dfa75", ["commit hash"]),
        ("(main d7b48bc)", ["commit hash"]),
        ('DIGEST = "4eb6d14ab23d70f5"', []),  # a digest in quotes is data
        ("a session's values, the session id", []),
        ("mask 0xdeadbeef and decade 1234567", []),
        ("sha256 56ce8ab141f3858a5ea9fbaab5b3a6eb1e762f24b0882ad0ccabb5e408f7e2ca", []),
    ],
)
def test_history_mentions_are_told_from_ordinary_text(text: str, kinds: list[str]) -> None:
    """The patterns catch each kind of history mention and leave data and ordinary words alone."""
    assert [kind for _, kind, _ in history_mentions(text)] == kinds
