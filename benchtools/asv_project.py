"""Running asv on a project from the bench commands (history, gate, dashboard): the project's
folder, asv's command line in this interpreter, and this machine's entry in asv's machine file,
recorded without questions when missing.

Imports only the standard library at import time: asv imports every module of bench/ when it
discovers benchmarks, in environments that have asv_runner but not asv.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

# The repository this bench/ belongs to: where asv.conf.json is.
REPOSITORY = Path(__file__).resolve().parents[1]


def asv(project: Path, *args: str) -> int:
    """Runs `asv ARGS` in `project` with this interpreter's asv, its output on ours; the exit status.

    Error handling: SystemExit with the install command when asv is missing."""
    if importlib.util.find_spec("asv") is None:
        raise SystemExit("the benchmarks need asv: pip install -e '.[bench]'")
    return subprocess.run([sys.executable, "-m", "asv", *args], cwd=project, check=False).returncode


def ensure_machine(project: Path) -> str:
    """This machine's name in asv's machine file (~/.asv-machine.json), recorded with asv's defaults
    (`asv machine --yes`) when it is missing: asv would ask questions otherwise, and fails where
    nobody can answer them (a pipe, CI)."""
    from asv import util
    from asv.machine import Machine, MachineCollection

    name = Machine.get_unique_machine_name()
    try:
        MachineCollection.load(name)
    except util.UserError:
        if asv(project, "machine", "--yes") != 0:
            raise SystemExit("`asv machine --yes` failed: see its output above") from None
    return name


def html_dir(project: Path) -> Path:
    """Where `asv publish` writes the dashboard of `project` (its config's html_dir)."""
    from asv.config import Config

    return project / Config.load(str(project / "asv.conf.json")).html_dir


def git(project: Path, *args: str) -> str:
    """The output of `git ARGS` in `project`.

    Error handling: SystemExit with git's message when it fails (not a repository, unknown commit)."""
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
