"""The runtime under a steady open-loop load, beside its zero-overhead floor: what the asv suite
tracks as the 80%-load overhead (bench_runtime.RuntimeAtLoad), kept here for any experiment that
replays a load on a real cluster.

Open loop: jobs are submitted at Poisson arrival times whatever the cluster is doing, as users do,
at `load` of the cluster's nominal capacity (node monitors x slots); each job has `tasks_per_job`
tasks that sleep `task_ms` (they hold a slot, not a CPU). The floor is the simulator's omniscient
policy (sparrow_core.sim: one infinitely fast central queue, no network) replaying the same
arrivals with the durations the tasks measured in their workers. What the runtime adds (messages,
probes, a reservation queued at a busy node monitor, Python) is the gap between the two. The
machinery is `sparrow local --demo`'s (sparrow_runtime.demo), with constant task durations.

Import-safe (asv imports every module of bench/ with any version of the package): without
sparrow_runtime.demo, the functions that need it raise NotImplementedError, which asv reports as
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import trio

try:
    from sparrow_experiments.demo_report import DemoReport, build_report
    from sparrow_runtime import LocalCluster
    from sparrow_runtime.demo.workload import Workload, make_workload, run_workload
except ImportError:
    try:  # the older layout (the demo's modules at the top of the package), for asv's runs of older commits
        from sparrow_runtime import LocalCluster
        from sparrow_runtime.demo_report import DemoReport, build_report  # type: ignore[no-redef]
        from sparrow_runtime.demo_workload import Workload, make_workload, run_workload  # type: ignore[no-redef]
    except ImportError:
        make_workload = None  # type: ignore[assignment]


def require_runtime() -> None:
    """NotImplementedError unless the installed package has what an open-loop run needs."""
    if make_workload is None:
        raise NotImplementedError("this sparrow_runtime has no sparrow_runtime.demo (open-loop runs need it)")


@dataclass(frozen=True)
class LoadSpec:
    """One open-loop run. The defaults are the suite's: 10-task jobs of 10 ms at 80% of 2 node
    monitors x 1 slot (16 jobs/s) for 4 s of arrivals."""

    load: float = 0.8
    tasks_per_job: int = 10
    task_ms: float = 10.0
    seconds: float = 4.0
    node_monitors: int = 2
    slots: int = 1
    seed: int = 0

    def workload(self, arrivals: np.ndarray | None = None) -> Workload:
        """Poisson arrivals during `seconds` at `load` (or the `arrivals` given, e.g. the ones other
        systems get in the same comparison); every task `task_ms` long.

        Error handling: ValueError naming the bad argument (load outside (0, 1), ...)."""
        require_runtime()
        if arrivals is None:
            arrivals = make_workload(
                load=self.load,
                duration=self.seconds,
                slots=self.node_monitors * self.slots,
                min_tasks=self.tasks_per_job,
                max_tasks=self.tasks_per_job,
                task_ms=self.task_ms,
                seed=self.seed,
            ).arrivals
        task = np.full(self.tasks_per_job, self.task_ms / 1e3)
        return Workload(arrivals, [task] * len(arrivals))


@dataclass(frozen=True)
class LoadRun:
    """The jobs of one run (`report`: the runtime's and the floor's response per job)."""

    spec: LoadSpec
    report: DemoReport

    def beyond_task_ms(self, q: float = 50) -> tuple[float, float]:
        """(runtime, floor): the q-th percentile of (job response - task_ms), in ms."""
        task = self.spec.task_ms / 1e3
        return (
            1e3 * float(np.percentile(self.report.response - task, q)),
            1e3 * float(np.percentile(self.report.ideal_response - task, q)),
        )

    def overhead_ms(self, q: float = 50) -> float:
        """What the runtime adds to the floor at the q-th percentile of (response - task_ms), in ms."""
        runtime, floor = self.beyond_task_ms(q)
        return runtime - floor


def run_open_loop(cluster: LocalCluster, spec: LoadSpec, arrivals: np.ndarray | None = None) -> LoadRun:
    """Runs spec's workload (with `arrivals`, if given) on a started `cluster` of spec.node_monitors x
    spec.slots (after one unrecorded warm-up job) and replays it on the floor.

    Error handling: RuntimeError if any task failed (the figures would not describe the load)."""
    run = partial(run_workload, slots=spec.node_monitors * spec.slots)
    records = trio.run(run, cluster.schedulers, cluster.secret, spec.workload(arrivals))
    report = build_report(records, node_monitors=spec.node_monitors, slots=spec.slots)
    if report.failed:
        raise RuntimeError(f"{report.failed} of {report.tasks} tasks failed under load: {report.errors}")
    return LoadRun(spec, report)


def run_on_local_cluster(spec: LoadSpec, executor: str = "process") -> LoadRun:
    """run_open_loop on a fresh LocalCluster (1 scheduler, spec's node monitors and slots)."""
    require_runtime()
    try:  # imported here: bench_runtime, which cluster_options' package shares, imports this module
        from bench.cluster_options import cluster_options
    except ModuleNotFoundError:
        from cluster_options import cluster_options
    options = cluster_options(executor)
    with LocalCluster(schedulers=1, node_monitors=spec.node_monitors, slots=spec.slots, **options) as cluster:
        return run_open_loop(cluster, spec)
