"""A digest of the simulator's decisions over many configurations, to show that a speed change
decides exactly as before: every policy on several workloads, loads, seeds, cluster sizes, queue
policies, constraints, stealing and pipelining settings, and traces (dependencies, a replayed
placement). Each run's outputs (per-job arrival, response, ideal, wait, user, priority, per-task
waits, every counter, the end time) are hashed; the digest hashes those in order.

    python benchtools/sim_digest.py             # every configuration (about 6 s here), then the digest
    python benchtools/sim_digest.py --portable  # only the trace runs (seconds): no libm on the way, the
                                           # same digest on any machine (tests/sim/test_digest.py pins it)
    python benchtools/sim_digest.py --each      # one line per run too, to find the run that differs

Run it with two installs (e.g. main's and a branch's) and compare the last line. The generated
workloads draw exponentials through libm, so their digest may differ between machines (not
between two installs on one machine); the trace runs use only IEEE arithmetic and integer draws.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

try:
    from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, SimResult, simulate
except ImportError:  # asv imports every module of bench/: it must import with any version of the package
    SimConfig = simulate = None  # type: ignore[assignment,misc]

# Settings each policy is run with on each workload below (name, the policies whose name contains
# `applies`, overrides of SimConfig).
VARIANTS: list[tuple[str, str, dict[str, object]]] = [
    ("plain", "", {}),
    ("delays", "", {"launch_overhead": 0.002, "submit_delay": 0.001, "result_delay": 0.003}),
    ("no-cancellation-probe1.5", "sparrow", {"cancellation": False, "probe_ratio": 1.5}),
    ("steal-take3-victims3", "steal", {"steal_victims": 3, "steal_max_take": 3}),  # the tie-break draw path
    ("steal-wait-minblocked", "steal", {"steal_wait": 0.001, "steal_min_blocked": 0.02}),
    ("pipeline-after-depth4", "pipelined", {"pipeline_after": 0.5, "pipeline_depth": 4}),
    ("pipeline-gate-jit", "pipelined", {"pipeline_gate": True, "pipeline_jit": True}),
    ("pipeline-gate-steady", "pipelined", {"pipeline_gate": True, "pipeline_steady": True}),
]


def workloads() -> list[tuple[str, SimConfig]]:
    """Generated workloads (name, SimConfig): the issue's target points at a small job count and
    smaller clusters with queue policies, users, priorities, several schedulers and constraints."""
    return [
        (
            "steal-point",  # the steal speed point: 10,000 x 1, 100-task jobs, per_job, load 0.9
            SimConfig(n_workers=10_000, tasks_per_job=100, load=0.9, n_jobs=400, duration="per_job", seed=1),
        ),
        (
            "steal-point-0.95",
            SimConfig(n_workers=10_000, slots=2, tasks_per_job=100, load=0.95, n_jobs=400, seed=9),
        ),
        (
            "paper-point",  # 10,000 x 4, exponential, load 0.8
            SimConfig(n_workers=10_000, slots=4, tasks_per_job=100, load=0.8, n_jobs=200, seed=2),
        ),
        (
            "bimodal-0.95",
            SimConfig(
                n_workers=1000,
                tasks_per_job=10,
                load=0.95,
                n_jobs=3000,
                duration="bimodal",
                bimodal_long_fraction=0.05,
                bimodal_ratio=20.0,
                seed=3,
            ),
        ),
        (
            "short-tasks-3-schedulers",  # 2 ms tasks: pipelining's gates open
            SimConfig(
                n_workers=300,
                slots=2,
                tasks_per_job=20,
                load=0.7,
                n_jobs=2000,
                mean_duration=0.002,
                n_schedulers=3,
                seed=4,
            ),
        ),
        (
            "constant-ties",  # equal durations: completions tie in time
            SimConfig(n_workers=200, slots=2, tasks_per_job=10, load=0.85, n_jobs=2000, duration="constant", seed=5),
        ),
        (
            "constrained",
            SimConfig(
                n_workers=400,
                tasks_per_job=16,
                load=0.85,
                n_jobs=1500,
                duration="per_job",
                constrained_jobs=0.1,
                constraint_workers=0.2,
                constrained_tasks=0.1,
                task_candidates=4,
                seed=6,
            ),
        ),
        (
            "fair-two-users",
            SimConfig(
                n_workers=300,
                slots=3,
                tasks_per_job=12,
                load=0.9,
                n_jobs=1500,
                queue_policy="fair",
                user_weights=(3.0, 1.0),
                user_demands=(0.5, 0.5),
                duration="bimodal",
                seed=7,
            ),
        ),
        (
            "priority-two-levels",
            SimConfig(
                n_workers=300,
                tasks_per_job=8,
                load=0.9,
                n_jobs=2000,
                queue_policy="priority",
                priority_shares=(0.3, 0.7),
                constrained_tasks=0.05,
                seed=8,
            ),
        ),
    ]


# Trace workloads (name, lines, overrides): durations from a fixed list, so no libm on the way.
DURATIONS = (0.02, 0.05, 0.4, 0.03, 1.2, 0.06, 0.01, 0.15, 0.005)


def _busy_lines() -> list[str]:
    """600 jobs at load about 0.9 on 80 x 2 slots, heavy-tailed, some constrained, some stages."""
    lines = []
    for j in range(600):
        n = j * 7 % 13 + 3
        fields = ""
        if j % 17 == 0:
            fields += " workers=" + ",".join(str((j + 5 * i) % 80) for i in range(12))
        if j % 11 == 3:
            fields += f" workers.0={j % 80},{(j + 31) % 80}"
        if j % 23 == 9 and j > 30:
            fields += f" after={j - 7},{j - 20}"
        lines.append(f"{0.016 * j:.3f} {n} {DURATIONS[j % 9]}{fields}")
    return lines


def _mixed_lines() -> list[str]:
    """300 jobs of 40 tasks with a duration per task on 400 workers: short and long tasks mixed."""
    lines = []
    for j in range(300):
        durations = " ".join(str(DURATIONS[(j * 5 + 3 * t) % 9]) for t in range(40))
        lines.append(f"{0.0018 * j:.4f} 40 {durations}")
    return lines


def _replayed_lines() -> list[str]:
    """A replayed placement (probes=): 400 jobs of 5 tasks on 50 workers."""
    return [
        f"{0.02 * j:.2f} 5 {DURATIONS[j % 9]} probes=" + ",".join(str((j * 13 + 7 * i) % 50) for i in range(10))
        for j in range(400)
    ]


TRACES: list[tuple[str, list[str], dict[str, object]]] = [
    ("trace-busy", _busy_lines(), {"n_workers": 80, "slots": 2, "n_schedulers": 2, "seed": 11}),
    ("trace-mixed", _mixed_lines(), {"n_workers": 400, "seed": 12}),
    ("trace-replayed", _replayed_lines(), {"n_workers": 50, "seed": 13}),
]
# The replay policies but batch (the digest runs on older installs too, whose batch policy crashes on a replayed
# placement).
REPLAYED_POLICIES = ("sparrow", "sparrow_steal", "sparrow_pipelined", "sparrow_steal_pipelined")


def result_digest(result: SimResult) -> str:
    """sha256 of every output of one run."""
    h = hashlib.sha256()
    for array in (
        result.job_arrival,
        result.job_response,
        result.job_ideal,
        result.job_wait,
        result.job_user,
        result.job_priority,
        result.task_wait,
    ):
        h.update(array.tobytes())
    # the counters that counted something: a counter added later (steal_replayed) is 0 in every run that predates it
    h.update(repr(sorted((k, v) for k, v in result.counters.items() if v)).encode())
    h.update(repr(result.end_time).encode())
    return h.hexdigest()


def configurations(folder: Path, *, portable: bool) -> Iterator[tuple[str, SimConfig]]:
    """(name, config) of every run, in a fixed order; trace files are written to `folder`."""
    runs: list[tuple[str, SimConfig]] = []
    for name, lines, overrides in TRACES:
        path = folder / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n")
        runs.append((name, replace(SimConfig(trace=path), **overrides)))  # type: ignore[arg-type]
    if not portable:
        runs += workloads()
    for name, base in runs:
        for policy in PLACEMENT_POLICIES:
            if name == "trace-replayed" and policy not in REPLAYED_POLICIES:
                continue
            for variant, applies, overrides in VARIANTS:
                if applies not in policy:
                    continue
                yield f"{name}/{policy}/{variant}", replace(base, policy=policy, **overrides)  # type: ignore[arg-type]


def digest(*, portable: bool, each: bool = False) -> str:
    """The digest of every run (printing one line per run with each=True)."""
    total = hashlib.sha256()
    with tempfile.TemporaryDirectory() as folder:
        for name, config in configurations(Path(folder), portable=portable):
            run = result_digest(simulate(config))
            if each:
                print(f"{run[:16]} {name}")
            total.update(f"{name} {run}\n".encode())
    return total.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description="A digest of the simulator's decisions over many configurations.")
    parser.add_argument("--portable", action="store_true", help="only the trace runs (no libm: any machine)")
    parser.add_argument("--each", action="store_true", help="print each run's digest too")
    args = parser.parse_args()
    if simulate is None:
        raise SystemExit("sim_digest: sparrow_core.sim is not available")
    print(f"{digest(portable=args.portable, each=args.each)} {'portable' if args.portable else 'all'}")


if __name__ == "__main__":
    main()
