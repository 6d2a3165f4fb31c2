"""`sparrow simulate`, run as a user would: a subprocess of `python -m sparrow_runtime.cli.main`."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["--workers", "40", "--tasks-per-job", "4", "--jobs", "60"]


def sparrow(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sparrow_runtime.cli.main", "simulate", *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_sweep_prints_a_table_and_writes_csv(tmp_path: Path) -> None:
    """Every (policy, load) point becomes a table line and a CSV row."""
    out = tmp_path / "rows.csv"
    done = sparrow(*TINY, "--policies", "sparrow,omniscient", "--loads", "0.3,0.6", "-o", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "sparrow" in done.stdout and "omniscient" in done.stdout
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [(r["policy"], float(r["load"])) for r in rows] == [
        ("sparrow", 0.3), ("omniscient", 0.3), ("sparrow", 0.6), ("omniscient", 0.6),
    ]
    assert all(float(r["vs_omniscient"]) >= 1.0 for r in rows)


def test_sweep_writes_json_and_a_plot(tmp_path: Path) -> None:
    """--output FILE.json holds the rows; --plot draws a PNG."""
    out, figure = tmp_path / "rows.json", tmp_path / "figure.png"
    done = sparrow(*TINY, "--policies", "random", "--loads", "0.5", "-o", out, "--plot", figure, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())[0]["policy"] == "random"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loads", "1.5"], "load must be in (0, 1)"),
        (["--loads", "high"], "--loads must be a comma-separated list of numbers"),
        (["--policies", "sparrow,fifo"], "--policies: unknown fifo"),
        (["--workers", "0"], "n_workers must be >= 1"),
        (["-o", "rows.txt"], "--output must end in .csv or .json"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    """A bad sweep is refused before simulating, with the reason on stderr."""
    done = sparrow(*TINY, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr


def test_plot_without_matplotlib_is_a_clear_error(tmp_path: Path) -> None:
    """--plot names the missing optional extra instead of failing mid-way."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from sparrow_runtime.cli.main import main\n"
        f"sys.exit(main(['simulate', *{TINY!r}, '--plot', 'f.png']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install 'sparrow-core[plot]'" in done.stderr
    assert not (tmp_path / "f.png").exists()


def test_paper_writes_results_table_and_figure(tmp_path: Path) -> None:
    """--paper runs all five policies at loads 0.1-0.9 on 10,000 workers (few jobs here)."""
    done = sparrow("--paper", "--jobs", "10", "--paper-dir", tmp_path / "paper", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((tmp_path / "paper" / "results.csv").read_text().splitlines()))
    assert len(rows) == 5 * 9
    assert {r["policy"] for r in rows} == {"random", "per_task", "batch", "sparrow", "omniscient"}
    assert (tmp_path / "paper" / "table.md").read_text().startswith("| policy | load |")
    assert (tmp_path / "paper" / "figure.png").stat().st_size > 0
