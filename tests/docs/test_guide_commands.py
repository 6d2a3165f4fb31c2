"""The commands the guides show, tried: every `sparrow ...` line of a guide's code block parses with the
real command line (a renamed or retired flag fails here, not in a reader's shell), every `python -m
MODULE` / `python PATH` runs with `--help`, and every `pip install` extra exists. What the guides run as
a whole is run end to end elsewhere: deploy.md's multi-host setup in tests/deploy/test_netns_tls.py,
the alert rules' promtool commands in tests/deploy/, the site build in tests/docs/test_site.py."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from sparrow_runtime.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
# the guides a user reads (the dated logs of docs/results/ record commands as they were run then)
GUIDES = sorted(
    [p for p in (ROOT / "docs").rglob("*.md") if "results" not in p.relative_to(ROOT / "docs").parts]
    + [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
)
PROMPT = re.compile(r"^(?:\$|[\w.-]+\$)\s+")  # "$ " or a host's prompt in deploy.md ("sched-1$ ")


def _command_lines(path: Path) -> list[str]:
    """The shell lines of the code blocks of `path`: continuations joined, prompts and comments dropped,
    each `&&` / `;` / `|` segment apart."""
    found: list[str] = []
    in_block = False
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_block = not in_block
        elif in_block:
            text = line.strip()
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            text = PROMPT.sub("", text)
            text = re.sub(r"\s+#.*$", "", text)  # a trailing comment
            found += [part.strip() for part in re.split(r"&&|;|\|(?!\|)", text) if part.strip()]
        i += 1
    return found


def _words(command: str) -> list[str]:
    command = re.sub(r"\$\{?(\w+)\}?", r"\1", command).replace("~", "/home/user")
    return [w for w in shlex.split(command) if w != "&"]


def _commands(first: str) -> list[tuple[str, str]]:
    return [
        (f"{path.relative_to(ROOT)}: {line}", line)
        for path in GUIDES
        for line in _command_lines(path)
        if line.split()[0] == first and not any(w.endswith(":") for w in line.split()[:2])  # not output
    ]


SPARROW = _commands("sparrow")
PYTHON = [(where, line) for where, line in _commands("python") if re.match(r"python (-m \S+|\S+\.py)", line)]
PIP = [(where, line) for where, line in _commands("pip") if "install" in line]


def test_the_guides_show_commands_of_each_kind() -> None:
    """The extraction finds the guides' commands (the checks below are not vacuous)."""
    assert len(SPARROW) >= 30 and len(PYTHON) >= 10 and len(PIP) >= 8
    assert any("deploy.md" in where for where, _ in SPARROW)


@pytest.mark.parametrize(("where", "line"), SPARROW, ids=[w for w, _ in SPARROW])
def test_each_sparrow_command_of_a_guide_parses(where: str, line: str) -> None:
    """The line's command and flags exist and take the values shown (`--help` and `--version` exit 0)."""
    argv = _words(line)[1:]
    parser = build_parser(argv[0] if argv else None)
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        assert exc.code == 0, f"{where}: the command line refuses it"


@pytest.mark.parametrize(("where", "line"), PYTHON, ids=[w for w, _ in PYTHON])
def test_each_python_command_of_a_guide_runs_with_help(where: str, line: str) -> None:
    """`python -m MODULE` names a module there is, `python PATH` a file, and it answers `--help`."""
    words = _words(line)
    if words[1] == "-m":
        module = words[2]
        assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"
        if module in ("pytest", "mypy", "build", "venv") or module.startswith("ruff"):
            return  # the tools themselves: CONTRIBUTING runs them as CI does
        target = ["-m", module]
    else:
        assert (ROOT / words[1]).is_file(), f"{where}: no file {words[1]}"
        target = [words[1]]
    run = subprocess.run([sys.executable, *target, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{where}: --help failed:\n{run.stderr[-2000:]}"


@pytest.mark.parametrize(("where", "line"), PIP, ids=[w for w, _ in PIP])
def test_each_pip_install_of_a_guide_names_extras_there_are(where: str, line: str) -> None:
    """`pip install -e '.[EXTRA,...]'` names only extras pyproject.toml declares."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for named in re.findall(r"\.\[([\w,-]+)\]", line):
        assert set(named.split(",")) <= extras, f"{where}: unknown extra in {named}"
