"""Constraints in the simulator (csrc/sparrow/sim/simulator.h with the probe kernel of
csrc/sparrow/job_probes.h): a job constraint and per-task constraints, given by a trace, are both
honoured by every policy. With no network delay and constant durations on 1-slot workers, where
tasks may run decides a lone job's response time exactly: two tasks that may only run on the same
worker take twice as long as two that may run apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, simulate


def run(tmp_path: Path, lines: list[str], policy: str, **changes) -> list[float]:
    trace = tmp_path / "jobs.txt"
    trace.write_text("\n".join(lines) + "\n")
    config = SimConfig(policy=policy, n_workers=8, slots=1, network_delay=0.0, trace=trace, **changes)
    return simulate(config).job_response.tolist()


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_task_runs_only_where_its_constraint_meets_the_job_constraint(tmp_path: Path, policy: str) -> None:
    """Job on workers 0-1, task 0 on 1 or 2, task 1 on 1 or 3: both may only run on worker 1, one after
    the other (2 s), although the job's constraint alone would let them run side by side (1 s)."""
    job = "0 2 1.0 workers=0,1 workers.0=1,2 workers.1=1,3"
    assert run(tmp_path, [job], policy) == [2.0]


@pytest.mark.parametrize("policy", [p for p in PLACEMENT_POLICIES if p != "random"])
def test_job_constraint_alone_lets_the_tasks_run_side_by_side(tmp_path: Path, policy: str) -> None:
    """The contrast: with the job constraint only, every policy that looks for free workers runs the two
    tasks on workers 0 and 1 at once (random may draw the same worker twice)."""
    assert run(tmp_path, ["0 2 1.0 workers=0,1"], policy) == [1.0]


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_unconstrained_tasks_stay_inside_the_job_constraint(tmp_path: Path, policy: str) -> None:
    """Job on worker 2 only, one task also constrained (to 2 or 3): all three tasks run on worker 2 (3 s),
    although the cluster has 8 workers."""
    assert run(tmp_path, ["0 3 1.0 workers=2 workers.0=2,3"], policy) == [3.0]


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_per_task_constraints_alone_are_honoured(tmp_path: Path, policy: str) -> None:
    """No job constraint: two tasks pinned to worker 5 run one after the other; the third runs elsewhere."""
    assert run(tmp_path, ["0 3 1.0 workers.0=5 workers.2=5"], policy) == [2.0]


def test_constrained_trace_is_deterministic(tmp_path: Path) -> None:
    """The same trace and seed give the same results; another seed other ones (sparrow's probes differ)."""
    lines = [
        f"{0.1 * j:.1f} 4 0.3 0.5 0.2 0.4 workers=0,1,2,3,4,5 workers.0={j % 6},{(j + 2) % 6},7" for j in range(40)
    ]
    first = run(tmp_path, lines, "sparrow", seed=3)
    assert first == run(tmp_path, lines, "sparrow", seed=3)
    assert first != run(tmp_path, lines, "sparrow", seed=4)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 2 1.0 workers=0,1 workers.1=2,3", "trace line 2: task 1: none of its candidate workers is among the job's"),
        ("0 2 1.0 workers=0,8", r"trace line 2: candidates: worker id 8 is out of range \[0, 8\)"),
        ("0 2 1.0 workers.0=9", r"trace line 2: task 0: candidates: worker id 9 is out of range \[0, 8\)"),
    ],
)
def test_constraint_the_cluster_cannot_meet_fails_before_simulating(tmp_path: Path, line: str, message: str) -> None:
    """A task left with no worker, or a worker id beyond n_workers: ValueError naming the trace line."""
    with pytest.raises(ValueError, match=message):
        run(tmp_path, ["0 1 0.5", line], "sparrow")
