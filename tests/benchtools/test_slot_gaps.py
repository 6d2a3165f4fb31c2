"""benchtools/slot_gaps.py: the busy share and gaps of slots running 1 ms tasks, from the stamps the tasks make, on
both systems in one run; bad arguments are refused."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import Executor, Future

import pytest

from benchtools import slot_gaps
from benchtools.asv_project import REPOSITORY


class _Stamps(Executor):
    """Returns made-up stamps: worker 1 runs tasks of 1 ms with 0.1 ms between them, worker 2 with 0.3 ms."""

    def map(self, fn, *iterables, timeout=None, chunksize=1):  # type: ignore[no-untyped-def, override]
        out = []
        for i in range(len(list(iterables[0]))):
            pid, gap = (1, 0.0001) if i % 2 == 0 else (2, 0.0003)
            start = (i // 2) * (0.001 + gap)
            out.append((pid, start, start + 0.001))
        return iter(out)

    def submit(self, fn, /, *args, **kwargs) -> Future:  # type: ignore[no-untyped-def]
        raise NotImplementedError


def test_the_gaps_are_between_one_task_s_end_and_the_next_one_s_start_on_the_same_worker() -> None:
    figures = slot_gaps.measure(_Stamps(), 2000)
    assert figures["gap_p50_us"] == pytest.approx(300, rel=0.01)  # the upper median of 100s and 300s
    assert figures["gap_mean_us"] == pytest.approx(200, rel=0.01)
    assert figures["gap_p90_us"] == pytest.approx(300, rel=0.01)
    spans = (1000 * 1.1 - 0.1) + (1000 * 1.3 - 0.3)  # ms, each worker's first start to last end
    assert figures["slot_busy"] == pytest.approx(2000 / spans)
    assert figures["run_p50_ms"] == pytest.approx(1.0)


def test_a_run_measures_both_systems_with_the_script_s_own_function() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "benchtools.slot_gaps", "--rounds", "1", "--tasks", "40"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    for name in ("sparrow", "pool"):
        line = next(line for line in run.stdout.splitlines() if line.startswith(name))
        busy = float(re.search(r"slot busy ([\d.]+)%", line).group(1))  # type: ignore[union-attr]
        assert 0 < busy <= 100


def test_bad_arguments_are_refused() -> None:
    for argv in (["--rounds", "0"], ["--tasks", "1"], ["--systems", "ray"]):
        with pytest.raises(SystemExit):
            slot_gaps.main(argv)
