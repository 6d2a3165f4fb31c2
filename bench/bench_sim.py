"""asv benchmarks of the simulator (sparrow_core.sim): simulated tasks per second and peak
memory, at the issue's target point (10,000 workers x 4 slots, 100-task jobs, load 0.8), and with
work stealing at the steal speed point (10,000 workers x 1 slot, per_job durations, load 0.9).

Import-safe: with a sparrow_core that has no simulator, every benchmark is skipped.

Run directly (`python bench/bench_sim.py [--repeat N] [--jobs N]`) it prints the steal speed figure, simulated
tasks per CPU-second with and without stealing, alternating the two policies N times (min, median, best).
"""

from __future__ import annotations

import argparse
import statistics
import time

try:
    from sparrow_core.sim import PLACEMENT_POLICIES, SimConfig, simulate
except ImportError:  # an older package: asv skips benchmarks whose setup raises NotImplementedError
    SimConfig = simulate = None  # type: ignore[assignment,misc]
    PLACEMENT_POLICIES = ()


def _config(
    policy: str, n_workers: int, n_jobs: int, *, slots: int = 4, load: float = 0.8, duration: str = "exponential"
) -> SimConfig:
    return SimConfig(
        policy=policy,
        n_workers=n_workers,
        slots=slots,
        tasks_per_job=100,
        load=load,
        n_jobs=n_jobs,
        duration=duration,
        mean_duration=0.1,
        keep_task_waits=False,
        seed=1,
    )


def _steal_config(policy: str, n_jobs: int) -> SimConfig:
    """The steal speed point: 10,000 workers x 1 slot, per_job durations, load 0.9."""
    return _config(policy, 10_000, n_jobs, slots=1, load=0.9, duration="per_job")


class SimulatorThroughput:
    """Simulated tasks per wall-clock second, per policy, 10,000 workers x 4 slots."""

    params = (["sparrow", "batch", "per_task", "random", "omniscient"],)
    param_names = ("policy",)
    timeout = 300

    def setup(self, policy: str) -> None:
        if simulate is None:
            raise NotImplementedError("sparrow_core.sim is not available")
        self.config = _config(policy, 10_000, 5_000)
        simulate(_config(policy, 10_000, 50))  # warm the extension and allocator

    def time_simulate(self, policy: str) -> None:
        simulate(self.config)

    def track_tasks_per_second(self, policy: str) -> float:
        result = simulate(self.config)
        return result.n_tasks / result.wall_time

    track_tasks_per_second.unit = "tasks/s"  # type: ignore[attr-defined]


class StealThroughput:
    """Simulated tasks per wall-clock second with and without work stealing, 10,000 workers x 1
    slot, 100-task jobs with per_job durations, load 0.9 (the steal speed target)."""

    params = (["sparrow", "sparrow_steal"],)
    param_names = ("policy",)
    timeout = 300

    def setup(self, policy: str) -> None:
        if simulate is None or policy not in PLACEMENT_POLICIES:
            raise NotImplementedError(f"policy {policy} is not available")
        self.config = _steal_config(policy, 5_000)

    def track_tasks_per_second(self, policy: str) -> float:
        result = simulate(self.config)
        return result.n_tasks / result.wall_time

    track_tasks_per_second.unit = "tasks/s"  # type: ignore[attr-defined]

    def track_tasks_per_cpu_second(self, policy: str) -> float:
        """The same per second of this process's CPU time: robust to other processes on a shared
        machine (the figure the 2M tasks/s target is checked with)."""
        start = time.process_time()
        result = simulate(self.config)
        return result.n_tasks / (time.process_time() - start)

    track_tasks_per_cpu_second.unit = "tasks/CPU-s"  # type: ignore[attr-defined]


class SimulatorMemory:
    """Peak memory of a simulation: bounded by workers + jobs in flight, not by jobs run."""

    params = ([10_000, 100_000], [2_000, 20_000])
    param_names = ("n_workers", "n_jobs")
    timeout = 600

    def setup(self, n_workers: int, n_jobs: int) -> None:
        if simulate is None:
            raise NotImplementedError("sparrow_core.sim is not available")
        self.config = _config("sparrow", n_workers, n_jobs)

    def peakmem_simulate(self, n_workers: int, n_jobs: int) -> None:
        simulate(self.config)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Simulated tasks per CPU-second, sparrow and sparrow_steal alternating."
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs of each policy (default 5)")
    parser.add_argument("--jobs", type=int, default=5_000, help="jobs per run (default 5,000, as the asv benchmark)")
    args = parser.parse_args()
    if simulate is None:
        raise SystemExit("bench_sim: sparrow_core.sim is not available")
    if args.repeat < 1 or args.jobs < 1:
        raise SystemExit("bench_sim: --repeat and --jobs must be >= 1")
    rates: dict[str, list[float]] = {"sparrow": [], "sparrow_steal": []}
    for _ in range(args.repeat):
        for policy, seen in rates.items():
            start = time.process_time()
            result = simulate(_steal_config(policy, args.jobs))
            seen.append(result.n_tasks / (time.process_time() - start))
    for policy, seen in rates.items():
        print(
            f"{policy:14s} tasks/CPU-s: min {min(seen) / 1e6:.3f}M median {statistics.median(seen) / 1e6:.3f}M "
            f"best {max(seen) / 1e6:.3f}M (n={len(seen)}; 10,000 workers, per_job, load 0.9, {args.jobs} jobs)"
        )


if __name__ == "__main__":
    main()
