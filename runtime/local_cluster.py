"""LocalCluster: schedulers and node monitors as real processes on loopback, with a fresh secret.

    with LocalCluster(schedulers=1, node_monitors=2, slots=1) as cluster:
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
            ...

Each service is `python -m sparrow_runtime.service_main ...` in its own process group, started with
the secret in its environment (never on its command line); its address is the line it prints.
Unless `share_cpus` is set, each node monitor runs on its own share of this process's CPUs, with
its executors, as if it had a host of its own (see cpus.py: a message that wakes a process on
another CPU costs several times more than one on the same CPU).
On exit every group is sent SIGTERM, then SIGKILL after `stop_timeout`, so no process (executor
workers included) is left behind.

Error handling: a service that exits or prints nothing within `startup_timeout` seconds stops the
whole cluster and raises RuntimeError with its exit status.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from .auth import SECRET_ENV, new_secret
from .cpus import available_cpus, can_pin, format_cpu_list, local_layout
from .logsetup import LOG_LEVELS
from .node_monitor_logic import POLICIES
from .outcome_batching import check_result_delay
from .processes import child_env, describe_exit


class LocalCluster:
    """Start `schedulers` schedulers and `node_monitors` node monitors of `slots` slots each.

    `executor` ("process" or "thread"), `policy` and `weights` apply to every node monitor;
    `labels` (optional) gives each node monitor its labels, by position; `probe_ratio` and
    `result_delay` (optional) are the schedulers' (see serve_scheduler). The services log at
    `log_level` (debug, info, warning, error) to this process's standard error. Node monitor i has id
    "nm-i", so constraints can name it. `share_cpus=False` (default) runs each node monitor and its
    executors on its own share of the CPUs (`node_monitor_cpus`), and the schedulers on one CPU each
    (`scheduler_cpus`, from the last); True (always, where the system cannot pin) lets every service
    use every CPU. `dashboard` (default True) serves each scheduler's dashboard and metrics on a free
    loopback port. Attributes once started: `schedulers`, `node_monitors` (addresses "host:port"),
    `node_ids`, `node_monitor_pids`, `pids`, `secret`, `dashboard_urls` and `dashboard_url` (the first).
    """

    def __init__(
        self,
        schedulers: int = 1,
        node_monitors: int = 2,
        slots: int = 1,
        *,
        executor: str = "process",
        policy: str = "fifo",
        weights: dict[str, float] | None = None,
        labels: Sequence[Sequence[str]] | None = None,
        probe_ratio: float | None = None,
        result_delay: float | None = None,
        share_cpus: bool = False,
        dashboard: bool = True,
        log_level: str = "warning",
        startup_timeout: float = 30.0,
        stop_timeout: float = 5.0,
    ) -> None:
        if not isinstance(schedulers, int) or schedulers < 1:
            raise ValueError(f"schedulers must be an int >= 1, got {schedulers!r}")
        if not isinstance(node_monitors, int) or node_monitors < 1:
            raise ValueError(f"node_monitors must be an int >= 1, got {node_monitors!r}")
        if not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be an int >= 1, got {slots!r}")
        if executor not in ("process", "thread"):
            raise ValueError(f"executor must be 'process' or 'thread', got {executor!r}")
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if result_delay is not None:
            check_result_delay(result_delay)
        if log_level.lower() not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
        if labels is not None and len(labels) != node_monitors:
            raise ValueError(f"labels must have one entry per node monitor ({node_monitors}), got {len(labels)}")
        self.n_schedulers = schedulers
        self.n_node_monitors = node_monitors
        self.slots = slots
        self.executor = executor
        self.policy = policy
        self.weights = dict(weights or {})
        self.labels = [list(x) for x in labels] if labels is not None else [[] for _ in range(node_monitors)]
        self.probe_ratio = probe_ratio
        self.result_delay = result_delay
        self.log_level = log_level.lower()
        cpus = available_cpus()
        self.share_cpus = share_cpus or not can_pin()
        if self.share_cpus:
            self.scheduler_cpus, self.node_monitor_cpus = [cpus] * schedulers, [cpus] * node_monitors
        else:
            self.scheduler_cpus, self.node_monitor_cpus = local_layout(schedulers, node_monitors, cpus)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.secret = new_secret()
        self.schedulers: list[str] = []
        self.node_monitors: list[str] = []
        self.node_ids = [f"nm-{i}" for i in range(node_monitors)]
        self.node_monitor_pids: list[int] = []
        self.dashboard = dashboard
        self.dashboard_urls: list[str] = []
        self._processes: list[subprocess.Popen] = []

    @property
    def dashboard_url(self) -> str | None:
        """The first scheduler's dashboard (docs/dashboard.md), once started; None with dashboard=False."""
        return self.dashboard_urls[0] if self.dashboard_urls else None

    @property
    def pids(self) -> list[int]:
        """The process ids of the running services (schedulers first)."""
        return [process.pid for process in self._processes]

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        try:
            for i in range(self.n_schedulers):
                args = ["scheduler", "--id", f"scheduler-{i}", *self._cpus_args(self.scheduler_cpus[i])]
                if self.probe_ratio is not None:
                    args += ["--probe-ratio", str(self.probe_ratio)]
                if self.result_delay is not None:
                    args += ["--result-delay", str(self.result_delay)]
                if self.dashboard:  # its HTTP port, on loopback: the dashboard's URL is its second line
                    address, url = self._start([*args, "--metrics-port", "0"], lines=2)
                    self.schedulers.append(address)
                    self.dashboard_urls.append(url)
                else:
                    self.schedulers.append(self._start(args)[0])
            for i, node_id in enumerate(self.node_ids):
                args = ["node-monitor", "--id", node_id, "--slots", str(self.slots)]
                args += self._cpus_args(self.node_monitor_cpus[i])
                args += ["--executor", self.executor, "--policy", self.policy]
                for address in self.schedulers:
                    args += ["--scheduler", address]
                for label in self.labels[i]:
                    args += ["--label", label]
                for user, weight in self.weights.items():
                    args += ["--weight", f"{user}={weight}"]
                self.node_monitors.append(self._start(args)[0])
                self.node_monitor_pids.append(self._processes[-1].pid)
        except BaseException:
            self.close()
            raise

    def _cpus_args(self, cpus: list[int]) -> list[str]:
        return [] if self.share_cpus else ["--cpus", format_cpu_list(cpus)]

    def _start(self, args: list[str], lines: int = 1) -> list[str]:
        """Start a service; returns the first `lines` lines it prints once ready (its address first)."""
        process = subprocess.Popen(
            [sys.executable, "-m", "sparrow_runtime.service_main", *args, "--log-level", self.log_level,
             "--exit-with-parent"],  # fmt: skip
            stdin=subprocess.PIPE,  # held open while we live: the service stops when it closes
            stdout=subprocess.PIPE,
            env=child_env({SECRET_ENV: self.secret}),
            start_new_session=True,
        )
        self._processes.append(process)
        deadline = time.monotonic() + self.startup_timeout
        line = b""
        while line.count(b"\n") < lines:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([process.stdout], [], [], max(remaining, 0))
            if not ready:
                raise RuntimeError(f"{args[0]} {args[2]} printed no address within {self.startup_timeout} s")
            chunk = os.read(process.stdout.fileno(), 256)
            if not chunk:
                process.wait(self.stop_timeout)
                raise RuntimeError(f"{args[0]} {args[2]} exited during startup ({describe_exit(process.returncode)})")
            line += chunk
        return [text.strip() for text in line.decode().splitlines()[:lines]]

    def close(self) -> None:
        """Stop every service (node monitors first) and their executor processes; idempotent."""
        for process in reversed(self._processes):
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for process in reversed(self._processes):
            try:
                process.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(process, signal.SIGKILL)  # whatever is left of the group, workers included
            process.wait()
            process.stdout.close()
            process.stdin.close()
        self._processes.clear()


def _signal_group(process: subprocess.Popen, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
