"""A trace's replayed placement (`probes=`): the simulator puts each job's reservations on the
workers the trace names instead of drawing them, exactly, and only when the trace says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import REPLAY_POLICIES, SimConfig, simulate
from sparrow_core.sim._trace import read_trace


def trace_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "placed.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def fifo_reference(arrival: list[float], worker: list[int], duration: list[float], *, delay: float) -> np.ndarray:
    """One-task jobs each probing one worker of one slot, late binding: a reservation arrives `delay` after its
    job, waits in its worker's FIFO queue, then holds the slot for the GetTask round trip (2 x delay) and the
    task. The response runs from the arrival to the task's end."""
    free: dict[int, float] = {}
    out = []
    for a, w, d in zip(arrival, worker, duration, strict=True):
        start = max(a + delay, free.get(w, 0.0)) + 2 * delay
        free[w] = start + d
        out.append(start + d - a)
    return np.array(out)


# pipelining asks ahead, which the reference does not model, so it is checked without a network delay only
@pytest.mark.parametrize(("policy", "delay"), [("sparrow", 0.0), ("sparrow", 0.001), ("sparrow_pipelined", 0.0)])
def test_each_reservation_lands_on_the_worker_the_trace_names(tmp_path: Path, policy: str, delay: float) -> None:
    """One-task jobs, one probe each: every job's response is that of a FIFO queue at the worker its line names
    (a reference model), whatever the seed, so no reservation went anywhere else."""
    rng = np.random.default_rng(7)
    arrival = np.cumsum(rng.exponential(0.01, 300)).tolist()
    worker = rng.integers(0, 4, 300).tolist()
    duration = rng.exponential(0.03, 300).tolist()  # load ~0.75 per worker: queues form
    lines = [f"{a:.9f} 1 {d:.9f} probes={w}" for a, w, d in zip(arrival, worker, duration, strict=True)]
    path = trace_file(tmp_path, lines)
    want = fifo_reference(
        [float(line.split()[0]) for line in lines], worker, [float(line.split()[2]) for line in lines], delay=delay
    )
    for seed in (0, 1):
        result = simulate(SimConfig(policy=policy, n_workers=4, trace=path, network_delay=delay, seed=seed))
        np.testing.assert_allclose(result.job_response, want, rtol=0, atol=1e-9)
        assert result.counters["probes"] == 300


def test_batch_places_a_replayed_job_on_its_probed_workers(tmp_path: Path) -> None:
    """The batch policy takes a replayed placement too (the probes carry task tags for it): probes=2,2 gives it
    two answers from worker 2, so both tasks queue there, one after the other."""
    path = trace_file(tmp_path, ["0 2 1.0 probes=2,2"])
    result = simulate(SimConfig(policy="batch", n_workers=3, trace=path, network_delay=0.0))
    assert result.job_response.tolist() == [2.0]
    assert result.counters["probes"] == 2


def test_a_job_probing_one_worker_twice_runs_both_tasks_there(tmp_path: Path) -> None:
    """probes=2,2 puts two reservations on worker 2: the job's two tasks run there one after the other while
    the other workers stay idle."""
    path = trace_file(tmp_path, ["0 2 1.0 probes=2,2"])
    result = simulate(SimConfig(policy="sparrow", n_workers=3, trace=path, network_delay=0.0))
    assert result.job_response.tolist() == [2.0]
    assert result.counters["probes"] == 2


def test_a_replayed_placement_makes_sparrow_independent_of_the_seed(tmp_path: Path) -> None:
    """The sparrow policy's seed only draws probes: with them replayed, wide jobs on a busy cluster give the
    same responses for any seed, and a different placement gives different ones."""
    rng = np.random.default_rng(3)
    lines, other = [], []
    for i in range(200):
        probes = rng.choice(10, 4, replace=False)
        durations = " ".join(f"{d:.6f}" for d in rng.exponential(0.05, 2))
        lines.append(f"{i * 0.008:.6f} 2 {durations} probes={','.join(map(str, probes))}")
        moved = rng.choice(10, 4, replace=False)  # another placement (not a relabelling of the workers)
        other.append(f"{i * 0.008:.6f} 2 {durations} probes={','.join(map(str, moved))}")
    path = trace_file(tmp_path, lines)
    runs = [simulate(SimConfig(policy="sparrow", n_workers=10, trace=path, seed=s)).job_response for s in (0, 5, 9)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    shifted = simulate(SimConfig(policy="sparrow", n_workers=10, trace=trace_file(tmp_path, other))).job_response
    assert not np.array_equal(runs[0], shifted)
    unplaced = trace_file(tmp_path, [line.rsplit(" ", 1)[0] for line in lines])
    drawn = [simulate(SimConfig(policy="sparrow", n_workers=10, trace=unplaced, seed=s)).job_response for s in (0, 5)]
    assert not np.array_equal(drawn[0], drawn[1])  # without probes= the seed still draws the placement


@pytest.mark.parametrize("policy", ["sparrow", "sparrow_steal"])
def test_a_tie_between_idle_probed_workers_goes_to_the_first_listed(tmp_path: Path, policy: str) -> None:
    """A job of two 1 s tasks probes four idle workers: its tasks run on the first two its line lists. The next
    job probes only workers 0 and 1 while those tasks run: it waits for them when the first job listed 0 and 1
    first, and not when it listed them last (sparrow_experiments.placement lists a run's probes in its answer order)."""
    for first, response in (("0,1,2,3", 1.005), ("2,3,0,1", 0.103)):
        path = trace_file(tmp_path, [f"0 2 1.0 1.0 probes={first}", "0.1 2 0.1 0.1 probes=0,1,0,1"])
        result = simulate(SimConfig(policy=policy, n_workers=4, trace=path, network_delay=0.001))
        np.testing.assert_allclose(result.job_response, [1.003, response], rtol=0, atol=1e-9, err_msg=first)


def test_read_trace_keeps_the_probes_flat(tmp_path: Path) -> None:
    """probes= fields read into one flat array and its offsets, repeats kept."""
    trace = read_trace(trace_file(tmp_path, ["0 1 1 probes=3", "1 2 1 probes=0,0,5"]))
    assert trace.probes is not None and trace.probe_offsets is not None
    assert trace.probes.tolist() == [3, 0, 0, 5]
    assert trace.probe_offsets.tolist() == [0, 1, 4]
    assert read_trace(trace_file(tmp_path, ["0 1 1"])).probes is None


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["0 2 1 probes=1"], "at least one worker per task"),
        (["0 1 1 probes=1", "1 1 1"], "every job needs probes="),
        (["0 1 1", "1 1 1 probes=0"], "every job needs probes="),
        (["0 1 1 probes=1 workers=1,2"], "cannot be combined"),
        (["0 1 1 probes=-1"], "must be >= 0"),
        (["0 1 1 probes=a"], "worker ids separated by commas"),
    ],
)
def test_a_malformed_placement_is_rejected_with_its_line(tmp_path: Path, lines: list[str], message: str) -> None:
    """Each bad probes= field fails at read time naming the file and what is wrong."""
    with pytest.raises(ValueError, match=message):
        read_trace(trace_file(tmp_path, lines))


def test_a_probed_worker_beyond_the_cluster_is_rejected(tmp_path: Path) -> None:
    """A worker id the cluster does not have fails before the simulation, naming the trace line."""
    path = trace_file(tmp_path, ["0 1 1 probes=0", "# comment", "1 1 1 probes=4"])
    with pytest.raises(ValueError, match="trace line 3: probes: worker 4"):
        simulate(SimConfig(policy="sparrow", n_workers=4, trace=path))


@pytest.mark.parametrize("policy", ["random", "per_task", "omniscient"])
def test_a_policy_that_does_not_batch_sample_refuses_a_placement(tmp_path: Path, policy: str) -> None:
    """Policies without batch sampling would ignore probes=: they say so instead."""
    assert policy not in REPLAY_POLICIES
    with pytest.raises(ValueError, match="replays a placement"):
        simulate(SimConfig(policy=policy, n_workers=4, trace=trace_file(tmp_path, ["0 1 1 probes=0"])))
