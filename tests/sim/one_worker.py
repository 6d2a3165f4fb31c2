"""Shared by the pipelining tests of the simulator (just in time, steady): a one-job trace on one 1-slot gated
worker, and the check that a configuration asks nothing ahead and decides exactly as plain late binding."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from sparrow_core.sim import SimConfig, simulate

D = 0.01  # one-way delay


def trace(path: Path, durations: list[float]) -> Path:
    """A trace of one job, arriving at 0, of tasks of `durations` seconds."""
    path.write_text("0 " + str(len(durations)) + " " + " ".join(map(str, durations)) + "\n")
    return path


def one_worker(tmp_path: Path, durations: list[float], **fields) -> SimConfig:
    """One 1-slot worker, gated 16-deep pipelining, running `trace(durations)`; `fields` add to it."""
    return SimConfig(
        policy="sparrow_pipelined",
        n_workers=1,
        network_delay=D,
        trace=trace(tmp_path / "t.txt", durations),
        pipeline_gate=True,
        pipeline_depth=16,
        **fields,
    )


def assert_asks_nothing_and_decides_as_plain(config: SimConfig) -> None:
    """`config` asks no task ahead, and every job's response equals plain late binding's (policy sparrow)."""
    result = simulate(config)
    assert result.counters["asked_ahead"] == 0
    np.testing.assert_array_equal(result.job_response, simulate(replace(config, policy="sparrow")).job_response)
