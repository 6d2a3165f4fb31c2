"""A small asv project for the tests of the bench commands: a pure-Python package `toy` whose three
commits have a known benchmark history (a steady kernel ratio, then a 2.4x regression; a runtime
ratio steady within 1.05x, then 1.6x worse), benchmarked with
this repository's asv.conf.json (virtualenv, its build and install commands) so that asv builds
each commit in seconds. The commands run as a user runs them, from a machine asv has never seen:
HOME is a fresh folder (no ~/.asv-machine.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchtools.asv_project import REPOSITORY

TOY_RATIOS = (0.020, 0.021, 0.050)  # per commit, oldest first: steady, then 2.4x worse
TOY_RUNTIME_RATIOS = (1.00, 1.05, 1.70)  # the runtime gate's: steady, then 1.6x worse
TOY_BENCHMARK = '''"""The toy's benchmarks: the ratios its version declares."""
import toy


class Toy:
    def track_time_vs_python(self):
        return toy.RATIO

    track_time_vs_python.unit = "ratio"


class RuntimeVsPool:
    def track_submit_cpu_vs_pool(self):
        return toy.RUNTIME_RATIO

    track_submit_cpu_vs_pool.unit = "ratio"
'''


@dataclass(frozen=True)
class Toy:
    root: Path
    commits: list[str]  # oldest first
    env: dict[str, str]

    def run(self, module: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`python -m MODULE ARGS --project ROOT` from the repository, as a user would."""
        command = [sys.executable, "-m", module, *args, "--project", str(self.root)]
        return subprocess.run(command, cwd=REPOSITORY, env=self.env, capture_output=True, text=True, timeout=timeout)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def _asv_config() -> dict:
    from asv.util import load_json

    config = load_json(str(REPOSITORY / "asv.conf.json"), js_comments=True)
    del config["matrix"]  # the toy needs nothing beyond what virtualenv seeds (pip, setuptools, wheel)
    return {**config, "project": "toy", "benchmark_dir": "benchmarks"}


@pytest.fixture(scope="session")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Toy:
    pytest.importorskip("asv", reason="the bench commands need asv: pip install -e '.[bench]'")
    root = tmp_path_factory.mktemp("toy")
    home = tmp_path_factory.mktemp("home")
    (root / "asv.conf.json").write_text(json.dumps(_asv_config(), indent=1))
    (root / "pyproject.toml").write_text(
        '[project]\nname = "toy"\nversion = "0"\n[tool.setuptools]\npy-modules = ["toy"]\n'
    )
    (root / ".gitignore").write_text(".asv/\n")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_toy.py").write_text(TOY_BENCHMARK)
    _git(root, "init", "-q", "-b", "main")
    commits = []
    for ratio, runtime_ratio in zip(TOY_RATIOS, TOY_RUNTIME_RATIOS, strict=True):
        (root / "toy.py").write_text(f"RATIO = {ratio}\nRUNTIME_RATIO = {runtime_ratio}\n")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"ratio {ratio}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASV", "PYTHON", "VIRTUAL_ENV"))}
    # A machine asv has not seen; pip keeps the user's cache (the environment installs from it).
    env.update(HOME=str(home), PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", os.path.expanduser("~/.cache/pip")))
    return Toy(root, commits, env)
