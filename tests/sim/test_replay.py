"""What replaying a runtime's trace needs from the simulator (csrc/sparrow/sim/simulator.h):
a per-task launch overhead, the client's submit and result delays, and jobs that wait for
other jobs (DAG stages, `after=` in a trace). Exact where the schedule is forced (idle cluster,
no network delay), queueing theory where it is not."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, simulate
from sparrow_core.sim.analytic import mg1_response


def trace_file(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "jobs.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- the new parameters at zero change nothing ----

# sha256 prefixes of the outputs (responses, waits, task waits, users, priorities, counters) of
# the simulator before launch_overhead, submit_delay, result_delay and dependencies existed.
# The trace and every decision use only IEEE additions and integer draws (no
# libm), so they are the same on any machine.
BEFORE = {
    ("random", "fifo"): "4eb6d14ab23d70f5",
    ("random", "fair"): "65d2318a4ae00bd4",
    ("per_task", "fifo"): "054d6bc2d3b70d1f",
    ("per_task", "fair"): "9ea75bdaf8bcf2e5",
    ("batch", "fifo"): "87fd5ec3a33c693b",
    ("batch", "fair"): "0129f379ade295e7",
    ("sparrow", "fifo"): "6f254fbaad0983ff",
    ("sparrow", "fair"): "947fa0743a858178",
    ("omniscient", "fifo"): "58e0f4713c6a7469",
    ("omniscient", "fair"): "ba6312a8c74ad168",
}


# Counters added later (work stealing's, its replay's, pipelining's): 0 for these policies, and left out of the digest.
LATER_COUNTERS = ("steal_attempts", "steals", "stolen", "steal_replayed", "asked_ahead", "bound_ahead")


def digest(result) -> str:  # type: ignore[no-untyped-def]
    h = hashlib.sha256()
    for array in (result.job_response, result.job_wait, result.task_wait, result.job_user, result.job_priority):
        h.update(array.tobytes())
    assert all(result.counters[name] == 0 for name in LATER_COUNTERS)
    h.update(repr(sorted((k, v) for k, v in result.counters.items() if k not in LATER_COUNTERS)).encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(("policy", "queue_policy"), sorted(BEFORE))
def test_new_parameters_at_zero_reproduce_the_earlier_simulator_bit_for_bit(
    tmp_path: Path, policy: str, queue_policy: str
) -> None:
    """300 trace jobs on 20 x 2 slots, two schedulers: the same outputs, bit for bit, as before."""
    durations = (0.05, 0.1, 0.25, 0.4)
    path = trace_file(tmp_path, [f"{0.013 * j:.3f} {j * 7 % 9 + 1} {durations[j % 4]}" for j in range(300)])
    config = SimConfig(
        policy=policy,
        n_workers=20,
        slots=2,
        n_schedulers=2,
        queue_policy=queue_policy,
        user_weights=(1.0,) if queue_policy == "fifo" else (3.0, 1.0),
        trace=path,
        seed=7,
        launch_overhead=0.0,
        submit_delay=0.0,
        result_delay=0.0,
    )
    assert digest(simulate(config)) == BEFORE[(policy, queue_policy)]


# ---- launch overhead ----

QUIET = SimConfig(
    n_workers=100, slots=100, tasks_per_job=10, load=0.05, n_jobs=300, duration="constant", mean_duration=0.1, seed=2
)


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_launch_overhead_adds_exactly_itself_to_every_response_without_queueing(policy: str) -> None:
    """Constant 100 ms tasks on a nearly idle cluster: a 3 ms launch overhead makes every job exactly
    3 ms slower, and no task waits in a queue either way."""
    base = simulate(replace(QUIET, policy=policy))
    slower = simulate(replace(QUIET, policy=policy, launch_overhead=0.003))
    assert not base.job_wait.any() and not slower.job_wait.any()
    np.testing.assert_allclose(slower.job_response - base.job_response, 0.003, rtol=0, atol=1e-12)


def test_random_placement_with_launch_overhead_is_mg1() -> None:
    """1-task jobs at random on 1-slot workers, exponential durations (mean m) plus an overhead o: each
    worker is an M/G/1 queue with service o + Exp(m); the mean response matches Pollaczek-Khinchine."""
    m, o, load = 1.0, 0.5, 0.4  # arrival rate per worker load / m; utilisation load (o + m) / m = 0.6
    config = SimConfig(
        policy="random",
        n_workers=100,
        slots=1,
        tasks_per_job=1,
        load=load,
        n_jobs=200_000,
        mean_duration=m,
        launch_overhead=o,
        network_delay=0.0,
        seed=5,
    )
    mean = simulate(config).summary(warmup=0.1)["mean"]
    assert mean == pytest.approx(mg1_response(load / m, o + m, (o + m) ** 2 + m**2), rel=0.04)


# ---- the client's submit and result delays ----


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_client_delays_shift_every_response_by_their_sum(policy: str) -> None:
    """At load 0.7 with queueing: submitting 2 ms later and learning results 5 ms later shifts the
    whole schedule, so every response grows by exactly 7 ms and every queue wait stays the same."""
    config = SimConfig(policy=policy, n_workers=50, slots=2, tasks_per_job=5, load=0.7, n_jobs=400, seed=9)
    base = simulate(config)
    later = simulate(replace(config, submit_delay=0.002, result_delay=0.005))
    np.testing.assert_allclose(later.job_response - base.job_response, 0.007, rtol=0, atol=1e-9)
    np.testing.assert_allclose(later.task_wait, base.task_wait, rtol=0, atol=1e-9)
    assert base.job_wait.max() > 0  # it did queue


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("launch_overhead", -0.001, ValueError, "launch_overhead must be >= 0.0"),
        ("submit_delay", float("nan"), ValueError, "submit_delay must be finite"),
        ("result_delay", float("inf"), ValueError, "result_delay must be finite"),
        ("launch_overhead", "1ms", TypeError, "launch_overhead must be a number"),
    ],
)
def test_bad_delays_are_refused_naming_the_field(field: str, value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        simulate(SimConfig(**{field: value}))  # type: ignore[arg-type]


# ---- dependencies ----

CHAIN = ["0 4 1.0 id=load", "0 2 2.0 after=load id=join", "0 1 0.5 after=join"]


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_chain_response_is_the_sum_of_its_stages_when_idle(tmp_path: Path, policy: str) -> None:
    """Three stages submitted together: each is released when the one before finishes, so on an idle
    cluster with no network delay the stages end at 1, 3 and 3.5 s."""
    config = SimConfig(policy=policy, n_workers=10, slots=1, network_delay=0.0, trace=trace_file(tmp_path, CHAIN))
    assert simulate(config).job_response.tolist() == [1.0, 3.0, 3.5]


def test_chain_under_sparrow_pays_its_hops_per_stage(tmp_path: Path) -> None:
    """With a 1 ms network delay each sparrow stage adds its three hops (reservation, get_task, reply),
    and the client delays and launch overhead add to every stage."""
    config = SimConfig(
        policy="sparrow",
        n_workers=10,
        slots=1,
        network_delay=0.001,
        launch_overhead=0.01,
        submit_delay=0.002,
        result_delay=0.004,
        trace=trace_file(tmp_path, CHAIN),
    )
    per_stage = 3 * 0.001 + 0.01 + 0.002 + 0.004
    expected = np.cumsum([1.0, 2.0, 0.5]) + per_stage * np.arange(1, 4)
    np.testing.assert_allclose(simulate(config).job_response, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("policy", ["omniscient", "sparrow"])
def test_job_waits_for_all_its_parents(tmp_path: Path, policy: str) -> None:
    """A diamond: b (2 s) and c (0.5 s) after a (1 s), d after both: d starts when b ends, at 3 s; a
    job whose parent finished before it arrived is not held back."""
    lines = ["0 1 1.0 id=a", "0 2 2.0 after=a id=b", "0 2 0.5 after=a id=c", "0 1 0.25 after=b,c", "10 1 0.5 after=a"]
    config = SimConfig(policy=policy, n_workers=10, slots=1, network_delay=0.0, trace=trace_file(tmp_path, lines))
    assert simulate(config).job_response.tolist() == [1.0, 3.0, 1.5, 3.25, 0.5]


def test_stages_release_in_order_amid_other_jobs(tmp_path: Path) -> None:
    """Ten 3-stage chains interleaved with independent jobs on a busy cluster: every stage ends after
    the stage it waits for (plus its own longest task), and the same seed gives the same run."""
    lines = []
    for q in range(10):
        t = 0.3 * q
        lines += [
            f"{t:.1f} 8 0.2 id=q{q}s0",
            f"{t:.1f} 3 0.1 0.3 0.2",
            f"{t:.1f} 4 0.4 after=q{q}s0 id=q{q}s1",
            f"{t:.1f} 2 0.1 after=q{q}s1",
        ]
    config = SimConfig(policy="sparrow", n_workers=6, slots=2, trace=trace_file(tmp_path, lines), seed=4)
    first = simulate(config)
    response = first.job_response.reshape(10, 4)
    assert (response[:, 2] >= response[:, 0] + 0.4).all() and (response[:, 3] >= response[:, 2] + 0.1).all()
    assert first.job_response.tolist() == simulate(config).job_response.tolist()
    assert first.job_wait.max() > 0  # the cluster was busy: stages queued


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["0 1 1.0", "0 1 1.0 after=b"], r"jobs.txt:2: after=b: no such job on an earlier line"),
        (["0 1 1.0 after=1", "0 1 1.0"], r"jobs.txt:1: after=1: no such job on an earlier line"),
        (["0 1 1.0 id=a after=a"], r"jobs.txt:1: after=a: no such job"),
        (["0 1 1.0 id=a", "0 1 1.0 id=a"], r"jobs.txt:2: id 'a' is already the name of job 0"),
        (["0 1 1.0 id=7"], r"jobs.txt:1: id must be a name, not all digits"),
        (["0 1 1.0", "0 1 1.0 after=0,0"], r"jobs.txt:2: after= lists job 0 twice"),
        (["0 1 1.0", "0 1 1.0 after="], r"jobs.txt:2: after=: no such job"),
    ],
)
def test_bad_reference_is_an_error_with_its_line(tmp_path: Path, lines: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(SimConfig(trace=trace_file(tmp_path, lines)))


def test_binding_refuses_a_dependency_on_a_later_job() -> None:
    """The C++ side checks dependencies it is handed directly too: ValueError, never a hang."""
    from sparrow_core import _core

    trace = {
        "arrival": np.zeros(2),
        "n_tasks": np.ones(2, dtype=np.int64),
        "durations": np.ones(2),
        "parents": np.array([1]),
        "parent_offsets": np.array([0, 1, 1]),
    }
    with pytest.raises(ValueError, match="trace job 0: a job may only wait for earlier jobs"):
        _core._simulate(SimConfig().params(), trace)


# ---- speed work changes no decision ----

# sha256 prefixes (as `digest` above, every counter included) of every policy on a busy trace
# (load about 0.9, heavy-tailed job durations), two users, two priorities and some constraints,
# taken before the simulator's speed work: a faster event loop,
# queue or message layout must decide exactly the same. No libm on the way (see BEFORE).
# sparrow_steal and sparrow_steal_pipelined retaken when the model took the
# runtime's steal protocol: stolen reservations pinned and not counted as stealable, a thief idle again
# during its attempt trying once more (policy/steal.h).
FAST_BEFORE = {
    ("random", "fifo"): "25cb77dc9ca140e0",
    ("random", "priority"): "4e3a54d1bfdd6e05",
    ("random", "fair"): "4d003b5011d6d7c7",
    ("per_task", "fifo"): "54fa22fb10a8ffe9",
    ("per_task", "priority"): "0ecdcbef3423bc86",
    ("per_task", "fair"): "141ef495987b8061",
    ("batch", "fifo"): "a0cca77b5bf7b83c",
    ("batch", "priority"): "0105a7d52c0864b9",
    ("batch", "fair"): "d1b5502d85c529b9",
    ("sparrow", "fifo"): "bb9889fef970b6db",
    ("sparrow", "priority"): "73ec1ef63e88f8aa",
    ("sparrow", "fair"): "977ab50c14d05dd8",
    ("omniscient", "fifo"): "5eea2d85cdd9ece7",
    ("omniscient", "priority"): "cc4ffc668ca7d0e4",
    ("omniscient", "fair"): "f7ff4220b8398754",
    ("sparrow_steal", "fifo"): "4d1c1f709265e2a4",
    ("sparrow_steal", "priority"): "75575ab1f2c20f0b",
    ("sparrow_steal", "fair"): "a80db74fac91e72b",
    ("sparrow_pipelined", "fifo"): "fb742426a50def1d",
    ("sparrow_pipelined", "priority"): "008f163db94c3f4f",
    ("sparrow_pipelined", "fair"): "8eb0ef97d72a0637",
    ("sparrow_steal_pipelined", "fifo"): "fac97197a044e10b",
    ("sparrow_steal_pipelined", "priority"): "dcd1f46c4a04ddd3",
    ("sparrow_steal_pipelined", "fair"): "5e25b882c9e725a7",
}


def busy_trace(tmp_path: Path) -> Path:
    durations = (0.02, 0.05, 0.4, 0.03, 1.2, 0.06, 0.01)
    return trace_file(tmp_path, [f"{0.021 * j:.3f} {j * 7 % 13 + 3} {durations[j % 7]}" for j in range(400)])


# Counters added after the speed work (a steal script's replay): 0 without one, and left out of the digest.
AFTER_SPEED_WORK = ("steal_replayed",)


def full_digest(result) -> str:  # type: ignore[no-untyped-def]
    h = hashlib.sha256()
    for array in (result.job_response, result.job_wait, result.task_wait, result.job_user, result.job_priority):
        h.update(array.tobytes())
    assert all(result.counters[name] == 0 for name in AFTER_SPEED_WORK)
    h.update(repr(sorted((k, v) for k, v in result.counters.items() if k not in AFTER_SPEED_WORK)).encode())
    return h.hexdigest()[:16]


def busy_config(tmp_path: Path, policy: str, queue_policy: str) -> SimConfig:
    return SimConfig(
        policy=policy,
        n_workers=60,
        slots=2,
        n_schedulers=2,
        queue_policy=queue_policy,
        user_weights=(3.0, 1.0),
        user_demands=(0.5, 0.5),
        priority_shares=(0.3, 0.7),
        constrained_jobs=0.05,
        constrained_tasks=0.02,
        pipeline_after=0.5,
        steal_max_take=2,
        trace=busy_trace(tmp_path),
        seed=11,
    )


@pytest.mark.parametrize(("policy", "queue_policy"), sorted(FAST_BEFORE))
def test_every_policy_decides_as_before_the_speed_work(tmp_path: Path, policy: str, queue_policy: str) -> None:
    """400 trace jobs at load about 0.9 on 60 x 2 slots, two users, two priorities, some constraints:
    every policy under every queue policy gives the same outputs, bit for bit, as before."""
    assert full_digest(simulate(busy_config(tmp_path, policy, queue_policy))) == FAST_BEFORE[(policy, queue_policy)]
