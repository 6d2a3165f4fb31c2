"""The sdist holds every file a build needs and nothing else: its listing is git's tracked files of the
package trees (C++ headers, Cython .pyx/.pxd/.pxi, .pyi stubs, dashboard assets, the Python) and the
top-level build files, plus what setuptools writes (PKG-INFO, setup.cfg, egg-info); no build product.
The version is one string, shown by `sparrow --version` and `sparrow_core.__version__`."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import sparrow_core
from sparrow_core._version import __version__

ROOT = Path(__file__).resolve().parents[1]
TREES = ("csrc", "sparrow_core", "runtime", "sparrow_experiments")
TOP = ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in", "CHANGELOG.md", "CONTRIBUTING.md")
WRITTEN_BY_SETUPTOOLS = ("PKG-INFO", "setup.cfg")


def tracked() -> set[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", *TREES], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return set(out.split()) | {name for name in TOP if (ROOT / name).exists()}


@pytest.mark.timeout(300)
def test_the_sdist_holds_exactly_the_tracked_sources(tmp_path):
    """`python -m build --sdist` lists git's tracked files of the trees and the build files, no more, no less."""
    build = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=280,
        env={**os.environ, "SPARROW_DEBUG": ""},
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (sdist,) = tmp_path.glob("sparrow_core-*.tar.gz")
    assert sdist.name == f"sparrow_core-{__version__}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
    names -= set(WRITTEN_BY_SETUPTOOLS)
    names = {n for n in names if not n.startswith("sparrow_core.egg-info/")}
    expected = tracked()
    assert not expected - names, f"tracked but not in the sdist: {sorted(expected - names)}"
    assert not names - expected, f"in the sdist but not tracked: {sorted(names - expected)}"
    for needed in (
        "csrc/sparrow/task_table.h",
        "sparrow_core/_kernels.pxd",
        "sparrow_core/_queue.pxi",
        "sparrow_core/_core.pyi",
        "runtime/dashboard/assets/dashboard.js",
    ):
        assert needed in names, needed


def test_one_version_for_the_package_the_metadata_and_the_command():
    """pyproject.toml takes the version from sparrow_core/_version.py; `sparrow --version` prints it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sparrow_core._version.__version__"}
    assert sparrow_core.__version__ == __version__
    shown = subprocess.run(
        [sys.executable, "-c", "from sparrow_runtime.cli.main import main; main()", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and shown.stdout == f"sparrow {__version__}\n"
