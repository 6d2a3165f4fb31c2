"""Runtime benchmarks: no-op tasks through a real local cluster (1 scheduler, 2 node monitors x 1 slot,
processes on loopback), driven by the async Client.

asv: `track_tasks_per_second` (jobs of 100 tasks, several in flight) and `track_job_latency_p50_ms` /
`track_job_latency_p99_ms` (one 10-task job at a time, submit to last outcome), per executor kind;
and RuntimeAtLoad: the 80%-load overhead against the zero-overhead floor (bench/open_loop.py).
Script: `python bench/bench_runtime.py [--executor process|thread] [--tasks N] [--jobs N] [--repeat N]`
prints them; with `--repeat`, each figure's best and range over N fresh clusters, and the load average
(the machine may be shared: the best run is the one least disturbed).
Targets (2-core machine): >= 3,000 tasks/s (process), >= 5,000 (thread); p50 <= 3 ms, p99 <= 10 ms.
"""

from __future__ import annotations

import argparse
import os
import time

try:
    from bench import open_loop
    from bench.cluster_options import cluster_options
    from bench.measure import cpu_counters, steal_percent
except ModuleNotFoundError:  # run as `python bench/bench_runtime.py`: bench/ is on sys.path, its parent is not
    import open_loop
    from cluster_options import cluster_options
    from measure import cpu_counters, steal_percent

try:
    import trio

    from sparrow_runtime import Client, LocalCluster
except ImportError:  # the suite must import with any version of the package
    LocalCluster = None

THROUGHPUT_TASKS = 6000
THROUGHPUT_JOB_SIZE = 100
LATENCY_JOBS = 300
LATENCY_JOB_SIZE = 10
IN_FLIGHT = 10  # jobs of the throughput run kept in flight at once


def _client(schedulers, credentials):
    """A Client with `credentials`: the cluster secret, or Client's keyword arguments ({"tls": ...})."""
    return Client(schedulers, **(credentials if isinstance(credentials, dict) else {"secret": credentials}))


async def measure_throughput(schedulers, secret, n_tasks=THROUGHPUT_TASKS, job_size=THROUGHPUT_JOB_SIZE) -> float:
    """Tasks per second for `n_tasks` no-op tasks in jobs of `job_size`, IN_FLIGHT jobs at a time;
    `secret`: the cluster's, or a LocalCluster's `credentials`."""
    async with _client(schedulers, secret) as client:
        await (await client.submit_job([int] * job_size)).wait()  # warm up: workers, connections
        start = time.perf_counter()
        pending = []
        for _ in range(n_tasks // job_size):
            pending.append(await client.submit_job([int] * job_size))
            if len(pending) >= IN_FLIGHT:
                await pending.pop(0).wait()
        for job in pending:
            await job.wait()
        return (n_tasks // job_size) * job_size / (time.perf_counter() - start)


async def measure_latencies(schedulers, secret, n_jobs=LATENCY_JOBS, job_size=LATENCY_JOB_SIZE) -> list[float]:
    """Sorted seconds from submission to the last outcome of one `job_size`-task job, one job at a time."""
    async with _client(schedulers, secret) as client:
        for _ in range(20):  # warm up
            await (await client.submit_job([int] * job_size)).wait()
        latencies = []
        for _ in range(n_jobs):
            start = time.perf_counter()
            await (await client.submit_job([int] * job_size)).wait()
            latencies.append(time.perf_counter() - start)
        return sorted(latencies)


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


class RuntimeNoOpTasks:
    """1 scheduler + 2 node monitors x 1 slot on loopback, no-op tasks."""

    params = (["process", "thread"],)
    param_names = ("executor",)
    timeout = 300
    number = 1
    repeat = 1

    def setup(self, executor):
        if LocalCluster is None:
            raise NotImplementedError("sparrow_runtime is not available")
        self.cluster = LocalCluster(schedulers=1, node_monitors=2, slots=1, **cluster_options(executor))
        self.cluster.start()

    def teardown(self, executor):
        self.cluster.close()

    def track_tasks_per_second(self, executor):
        return trio.run(measure_throughput, self.cluster.schedulers, self.cluster.secret)

    track_tasks_per_second.unit = "tasks/s"

    def track_job_latency_p50_ms(self, executor):
        return 1e3 * percentile(trio.run(measure_latencies, self.cluster.schedulers, self.cluster.secret), 0.50)

    track_job_latency_p50_ms.unit = "ms"

    def track_job_latency_p99_ms(self, executor):
        return 1e3 * percentile(trio.run(measure_latencies, self.cluster.schedulers, self.cluster.secret), 0.99)

    track_job_latency_p99_ms.unit = "ms"


class RuntimeAtLoad:
    """Open-loop Poisson arrivals of 10-task jobs of 10 ms at 80% of a LocalCluster of 2 node monitors
    x 1 slot (process executors) for 4 s, against the zero-overhead floor (bench/open_loop.py): the
    p50 of (job response - 10 ms) on the runtime and on the floor, and what the runtime adds. One run
    (setup_cache) serves the three figures."""

    timeout = 120

    def setup_cache(self) -> dict[str, float | str]:
        try:
            run = open_loop.run_on_local_cluster(open_loop.LoadSpec())
        except NotImplementedError as missing:  # not None: asv would then call setup without the cache
            return {"unavailable": str(missing)}
        runtime, floor = run.beyond_task_ms(50)
        return {"runtime": runtime, "floor": floor}

    def setup(self, figures: dict[str, float | str]) -> None:
        if "unavailable" in figures:
            raise NotImplementedError(figures["unavailable"])

    def track_response_p50_minus_task_ms(self, figures: dict[str, float]) -> float:
        return figures["runtime"]

    track_response_p50_minus_task_ms.unit = "ms"

    def track_floor_p50_minus_task_ms(self, figures: dict[str, float]) -> float:
        return figures["floor"]

    track_floor_p50_minus_task_ms.unit = "ms"

    def track_overhead_p50_ms(self, figures: dict[str, float]) -> float:
        return figures["runtime"] - figures["floor"]

    track_overhead_p50_ms.unit = "ms"


def run_once(
    executor: str, n_tasks: int, n_jobs: int, share_cpus: bool = False, pipeline: int | None = None
) -> tuple[float, float, float]:
    """(tasks/s, p50 ms, p99 ms) on a fresh cluster (`pipeline`: its node monitors' depth, `pipelining`)."""
    options = cluster_options(executor, pipeline)
    with LocalCluster(schedulers=1, node_monitors=2, slots=1, share_cpus=share_cpus, **options) as cluster:
        rate = trio.run(measure_throughput, cluster.schedulers, cluster.secret, n_tasks)
        lat = trio.run(measure_latencies, cluster.schedulers, cluster.secret, n_jobs)
    return rate, 1e3 * percentile(lat, 0.5), 1e3 * percentile(lat, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executor", choices=("process", "thread"), default="process")
    parser.add_argument("--tasks", type=int, default=THROUGHPUT_TASKS)
    parser.add_argument("--jobs", type=int, default=LATENCY_JOBS, help="10-task jobs for the latency figures")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each on a fresh cluster")
    parser.add_argument(
        "--share-cpus", action="store_true", help="let every service use every CPU (LocalCluster's share_cpus)"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    load_before, counters_before = os.getloadavg()[0], cpu_counters()
    runs = [run_once(args.executor, args.tasks, args.jobs, args.share_cpus) for _ in range(args.repeat)]
    load_after, steal = os.getloadavg()[0], steal_percent(counters_before, cpu_counters())
    machine = f"load average {load_before:.2f} -> {load_after:.2f}" + ("" if steal is None else f", steal {steal:.1f}%")
    rates, p50s, p99s = zip(*runs, strict=True)
    if args.repeat == 1:
        print(
            f"executor={args.executor}: {rates[0]:,.0f} tasks/s (jobs of {THROUGHPUT_JOB_SIZE}); "
            f"{LATENCY_JOB_SIZE}-task job latency p50 {p50s[0]:.2f} ms, p99 {p99s[0]:.2f} ms; {machine}"
        )
        return
    print(
        f"executor={args.executor}, {args.repeat} runs, {machine}:\n"
        f"  tasks/s (jobs of {THROUGHPUT_JOB_SIZE}): best {max(rates):,.0f}, "
        f"range {min(rates):,.0f}-{max(rates):,.0f}\n"
        f"  {LATENCY_JOB_SIZE}-task job p50 ms: best {min(p50s):.2f}, range {min(p50s):.2f}-{max(p50s):.2f}\n"
        f"  {LATENCY_JOB_SIZE}-task job p99 ms: best {min(p99s):.2f}, range {min(p99s):.2f}-{max(p99s):.2f}"
    )


if __name__ == "__main__":
    main()
