"""A replayed steal script (SimConfig.steal_script, policy/steal_script.h): a thief's attempt probes exactly the
victims of the run's attempt matched to it, draws them itself when none is left, and a malformed script is an
error that says what is wrong."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import SimConfig, read_steal_script, simulate

# Worker 1 runs job 0's 10 s task with job 1's reservation queued behind it; worker 0 runs job 2's 50 ms task
# and is idle from about 52 ms (its first attempt), then runs job 3's and is idle again from about 252 ms (its
# second); worker 1 attempts once its tasks are done (after 10 s). Workers 2 and 3 never hold anything: stealing
# from them gets nothing.
TRACE = [
    "0.000 1 10.0 probes=1",
    "0.001 1 0.1 probes=1",
    "0.002 1 0.05 probes=0",
    "0.200 1 0.05 probes=0",
]


def files(tmp_path: Path, script: list[str]) -> tuple[Path, Path]:
    trace, steals = tmp_path / "jobs.trace", tmp_path / "run.steals"
    trace.write_text("\n".join(TRACE) + "\n")
    steals.write_text("\n".join(script) + "\n")
    return trace, steals


def config(tmp_path: Path, script: list[str], **fields) -> SimConfig:
    trace, steals = files(tmp_path, script)
    defaults = {"policy": "sparrow_steal", "n_workers": 4, "steal_victims": 1, "steal_script_tolerance": 0.01}
    return SimConfig(trace=trace, steal_script=steals, **(defaults | fields))


def test_an_attempt_probes_exactly_the_scripted_victims(tmp_path: Path) -> None:
    """Worker 0's first attempt probing the empty workers 2 and 3 steals nothing, whatever the seed (job 1 waits
    for the 10 s task); probing 1 and 2 steals job 1's reservation at once, whatever the seed."""
    for seed in range(5):
        empty = simulate(config(tmp_path, ["0.05 0 2,3"], seed=seed))
        assert empty.counters["steal_replayed"] == 1 and empty.counters["stolen"] == 0
        assert empty.job_response[1] > 10.0
        loaded = simulate(config(tmp_path, ["0.05 0 1,2"], seed=seed))
        assert loaded.counters["steal_replayed"] == 1 and loaded.counters["stolen"] == 1
        assert loaded.job_response[1] < 0.2


def test_a_thief_draws_its_victims_once_its_scripted_attempts_are_used(tmp_path: Path) -> None:
    """One scripted attempt for worker 0, which attempts twice: the first is replayed, the second drawn (and
    worker 1's, after 10 s, with none scripted)."""
    result = simulate(config(tmp_path, ["0.05 0 2,3"]))
    assert result.counters["steal_attempts"] == 3 and result.counters["steal_replayed"] == 1


def test_attempts_outside_the_tolerance_are_not_replayed_and_the_draws_are_the_plain_ones(tmp_path: Path) -> None:
    """A script whose attempts are all far from the thieves' (or name another thief) replays nothing: every seed
    decides exactly as without a script, its victims drawn from the same Rng."""
    script = ["0.00 2 0,1", "0.15 0 1,2", "5.0 0 1,2"]  # worker 0 attempts at ~0.052 and ~0.252: 0.1 s away
    for seed in range(5):
        plain = simulate(replace(config(tmp_path, script, seed=seed), steal_script=None))
        scripted = simulate(config(tmp_path, script, seed=seed))
        assert scripted.counters["steal_replayed"] == 0
        assert scripted.counters["steal_attempts"] == plain.counters["steal_attempts"] >= 3
        np.testing.assert_array_equal(scripted.job_response, plain.job_response)


def test_the_first_unused_attempt_within_the_tolerance_is_matched_and_earlier_ones_skipped(tmp_path: Path) -> None:
    """Worker 0's attempt at ~0.052 skips the scripted one at 0.01 (too early) and takes the one at 0.06 (victims
    2, 3: nothing); its attempt at ~0.252 takes the one at 0.25 (victim 1: job 1's reservation), not the one at
    0.07 (used or skipped: never replayed later)."""
    result = simulate(config(tmp_path, ["0.01 0 1,2", "0.06 0 2,3", "0.07 0 1,2", "0.25 0 1,3"]))
    assert result.counters["steal_replayed"] == 2 and result.counters["stolen"] == 1
    assert 0.25 < result.job_response[1] < 0.5  # stolen at the second attempt, not the first


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (["0.05 4 1,2"], "attempt 0: thief 4 is not one of the n_workers"),
        (["0.05 0 1,9"], "attempt 0: victim 9 is not one of the n_workers"),
        (["0.05 0 -1,2"], "attempt 0: victim -1 is not one of the n_workers"),
        (["0.05 0 1,0"], "attempt 0: the thief is its own victim"),
        (["0.05 0 2,2"], "attempt 0: victim 2 is listed twice"),
        (["0.05 0 1,2", "0.04 1 2,3"], "attempt 1: its time is earlier than the previous attempt's"),
    ],
)
def test_a_malformed_script_is_an_error_naming_the_attempt(tmp_path: Path, script: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(config(tmp_path, script))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0.05 0", "expected `time thief victim,victim,...`"),
        ("0.05 0 1,2 3", "expected `time thief victim,victim,...`"),
        ("soon 0 1,2", "the time must be a number"),
        ("0.05 0 1,x", "the thief and victims integers"),
        ("0.05 0 1,,2", "the thief and victims integers"),
        ("nan 0 1,2", "the time must be finite"),
    ],
)
def test_a_malformed_line_is_an_error_naming_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    _, steals = files(tmp_path, ["# comment", "", line])
    with pytest.raises(ValueError, match=rf"run\.steals:3: .*{message.replace('(', '[(]')}"):
        read_steal_script(steals)


def test_a_script_needs_a_stealing_policy_and_a_tolerance_of_at_least_zero(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="steal_script replays work stealing, which policy 'sparrow'"):
        simulate(config(tmp_path, ["0.05 0 1,2"], policy="sparrow"))
    with pytest.raises(ValueError, match="steal_script_tolerance"):
        simulate(config(tmp_path, ["0.05 0 1,2"], steal_script_tolerance=-0.001))


def test_comments_and_blank_lines_are_skipped_and_the_arrays_are_flat(tmp_path: Path) -> None:
    _, steals = files(tmp_path, ["# the run's attempts", "0.05 0 1,2  # thief 0", "", "0.25 3 1"])
    script = read_steal_script(steals)
    assert script.at.tolist() == [0.05, 0.25] and script.thief.tolist() == [0, 3]
    assert script.victims.tolist() == [1, 2, 1] and script.victim_offsets.tolist() == [0, 2, 3]


def test_the_compiled_side_names_the_steal_script_for_bad_arrays(tmp_path: Path) -> None:
    """Arrays handed to the extension directly (not through read_steal_script) are checked there too, and the error
    names the steal script, not the trace."""
    from sparrow_core import _core

    cfg = config(tmp_path, ["0.05 0 2,3"])
    trace = {"arrival": np.zeros(1), "n_tasks": np.ones(1, dtype=np.int64), "durations": np.ones(1)}
    steals = {"at": np.array([0.05]), "thief": np.array([0]), "victim_offsets": np.array([1, 0]), "victims": []}
    with pytest.raises(ValueError, match=r"^steal script: victim_offsets must start at 0 and never decrease$"):
        _core._simulate(cfg.params(), trace, steals)
    steals = {"at": np.array([0.05]), "thief": np.array([0, 1]), "victim_offsets": np.array([0, 1]), "victims": [2]}
    with pytest.raises(ValueError, match=r"^steal script: thief must be one-dimensional with 1 entries"):
        _core._simulate(cfg.params(), trace, steals)
