"""`sparrow simulate`, run as a user would: a subprocess of `python -m sparrow_runtime.cli.main`."""

from __future__ import annotations

import csv
import json
import os
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
        ("sparrow", 0.3),
        ("omniscient", 0.3),
        ("sparrow", 0.6),
        ("omniscient", 0.6),
    ]
    assert all(float(r["vs_omniscient"]) >= 1.0 for r in rows)


def test_sweep_runs_work_stealing_with_its_settings(tmp_path: Path) -> None:
    """--policies sparrow_steal runs the stealing policy; its steal settings reach the simulator
    (a min-blocked no task reaches steals nothing, so the row equals sparrow's)."""
    out = tmp_path / "rows.csv"
    args = [*TINY, "--policies", "sparrow,sparrow_steal", "--loads", "0.9", "--steal-min-blocked", "1e9", "-o", out]
    done = sparrow(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plain, steal = list(csv.DictReader(out.read_text().splitlines()))
    assert (plain["policy"], steal["policy"]) == ("sparrow", "sparrow_steal")
    assert plain["mean"] == steal["mean"] and plain["p99"] == steal["p99"]


def test_sweep_runs_pipelined_late_binding_with_its_setting(tmp_path: Path) -> None:
    """--policies sparrow_pipelined runs the pipelined policy and --pipeline-after reaches it: asked
    ahead at once its rows differ from sparrow's; with a threshold no task reaches they equal them."""
    rows = {}
    for after in ("0", "1e9"):
        out = tmp_path / f"rows-{after}.csv"
        args = [
            *TINY,
            "--policies",
            "sparrow,sparrow_pipelined",
            "--loads",
            "0.9",
            "--pipeline-after",
            after,
            "-o",
            out,
        ]
        done = sparrow(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        rows[after] = list(csv.DictReader(out.read_text().splitlines()))
    (plain, at_once), (_, never) = rows["0"], rows["1e9"]
    assert at_once["policy"] == "sparrow_pipelined"
    assert at_once["mean"] != plain["mean"]
    assert never["mean"] == plain["mean"] and never["p99"] == plain["p99"]


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
        (["--steal-victims", "0"], "steal_victims must be >= 1"),
        (["--steal-min-blocked", "-1"], "steal_min_blocked must be >= 0"),
        (["--pipeline-depth", "0"], "pipeline_depth must be in [1, 64]"),
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
    """--paper --out DIR runs every policy at loads 0.1-0.9 on 10,000 workers (few jobs here), then
    the high-load workloads, writes its five files there and names each with its full path."""
    out = tmp_path / "nested" / "paper"
    done = sparrow("--paper", "--jobs", "10", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    assert len(rows) == 6 * 9
    assert {r["policy"] for r in rows} == {"random", "per_task", "batch", "sparrow", "sparrow_steal", "omniscient"}
    assert (out / "table.md").read_text().startswith("| policy | load |")
    assert (out / "figure.png").stat().st_size > 0
    high = list(csv.DictReader((out / "high_load.csv").read_text().splitlines()))
    assert len(high) == 6 * 6
    assert {(r["workload"], r["load"]) for r in high} == {
        ("per_job", "0.8"),
        ("per_job", "0.9"),
        ("per_job", "0.95"),
        ("bimodal", "0.9"),
        ("bimodal", "0.95"),
        ("exponential", "0.9"),
    }
    assert all(r["p50_vs_omniscient"] == "1.0" for r in high if r["policy"] == "omniscient")
    assert "| 10,000 workers, 100-task jobs, per_job | 0.9 | sparrow_steal |" in (out / "high_load.md").read_text()
    for name in ("results.csv", "table.md", "figure.png", "high_load.csv", "high_load.md"):
        assert str(out / name) in done.stdout


def test_paper_without_out_makes_a_new_folder_each_run_with_the_same_files(tmp_path: Path) -> None:
    """Without --out, --paper writes to a new folder of the current directory (never ./docs/paper),
    and a second run gets another folder rather than overwriting the first. The paper's files hold no
    machine-dependent column: the two runs of a seed give identical results.csv and table.md, so
    regenerating docs/paper/ leaves git clean."""
    first = sparrow("--paper", "--jobs", "10", cwd=tmp_path)
    second = sparrow("--paper", "--jobs", "10", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    folders = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 2 and all(p.name.startswith("sparrow-paper-") for p in folders)
    assert not (tmp_path / "docs").exists()
    for folder, done in zip(folders, (first, second), strict=True):
        assert f"paper files written to {folder}" in done.stdout
        assert sorted(p.name for p in folder.iterdir()) == [
            "figure.png",
            "high_load.csv",
            "high_load.md",
            "results.csv",
            "table.md",
        ]
    a, b = folders
    header = (a / "results.csv").read_text().splitlines()[0]
    assert "tasks_per_second" not in header and "tasks_per_second" not in (a / "table.md").read_text()
    for name in ("results.csv", "table.md", "high_load.csv", "high_load.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_out_is_refused_without_paper_and_when_it_is_a_file(tmp_path: Path) -> None:
    """--out belongs to --paper; a file where the folder should go is refused before simulating."""
    alone = sparrow(*TINY, "--out", tmp_path / "x", cwd=tmp_path)
    assert alone.returncode == 2 and "--out is the folder of --paper's files" in alone.stderr
    (tmp_path / "taken").write_text("")
    on_file = sparrow("--paper", "--jobs", "10", "--out", tmp_path / "taken", cwd=tmp_path)
    assert on_file.returncode == 2 and "is a file, not a folder" in on_file.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_a_failed_paper_run_leaves_no_empty_folder(tmp_path: Path) -> None:
    """A paper run refused after its folder was made (a bad --jobs) removes the folder it made."""
    done = sparrow("--paper", "--jobs", "-1", cwd=tmp_path)
    assert done.returncode == 2 and "n_jobs" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_piped_table_is_not_cut_at_80_columns(tmp_path: Path) -> None:
    """Piped (as here: stdout is a pipe), the table is as wide as its columns, none wrapped or cut."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    command = [sys.executable, "-m", "sparrow_runtime.cli.main", "simulate", *TINY, "--loads", "0.5"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "policy" in line)
    assert "tasks_per_second" in header and "vs_omniscient" in header
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    assert "…" not in done.stdout


def test_help_shows_every_flags_default(tmp_path):
    """Every flag of `sparrow simulate --help` ends with its default (none / off where unset)."""
    text = sparrow("--help", cwd=tmp_path).stdout.split("options:", 1)[1]
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("  -"):
            entries.append(line)
        elif entries:
            entries[-1] += " " + line.strip()
    entries = [" ".join(e.split()) for e in entries if not e.lstrip().startswith("-h")]
    assert len(entries) > 15
    assert all("(default: " in entry for entry in entries), [e for e in entries if "(default: " not in e]
    assert "--seed SEED seed of every random draw (the same seed, the same results) (default: 0)" in entries
