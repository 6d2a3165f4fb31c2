"""LocalCluster: schedulers and node monitors as real processes on this host, with a fresh secret, or
on TLS with a cluster CA of its own.

    with LocalCluster(schedulers=1, node_monitors=2, slots=1) as cluster:
        with SparrowExecutor(cluster.schedulers, **cluster.credentials) as ex:
            ...

Each service is the `sparrow scheduler` / `sparrow node-monitor` command a user runs on a host
(`python -m sparrow_runtime.cli.main ...`), with ordinary settings: `--listen unix:DIR/NAME.sock`, DIR a 0700
folder removed on close (with `transport="tcp"`, `--listen 127.0.0.1:0`; a node monitor's data
listener is `--data-listen unix:DIR/NAME.data` on either transport: the cluster is on one host, so a value
kept in a memory file passes to another node monitor as the file itself, data/links.py), its id,
`--exit-with-parent` (its standard input is a pipe this process holds: if this process dies, even
killed outright, the services stop), and `--secret-file` naming a private file (mode 0600 in a 0700
directory) removed once every service has read it: the secret is never on a command line nor in an
environment. With `tls`, each service gets `--tls-ca`, `--tls-cert` and `--tls-key` instead: a CA and a
certificate per role (certs.local_certs) in a folder of its own, made for this cluster (removed on
exit) or kept in the folder given (`sparrow local` keeps them in its state folder). Its address is the
ready line it prints. Settings it does not set come, as for any
`sparrow` command, from SPARROW_* variables and the file named by SPARROW_CONFIG (docs/configuration.md).
Unless `share_cpus` is set, each node monitor runs on its own share of this process's CPUs, with
its executors, as if it had a host of its own (see cpus.py: a message that wakes a process on
another CPU costs several times more than one on the same CPU).

On exit the node monitors stop first, as on SIGTERM: they drain (running tasks finish and report,
for up to `stop_timeout` seconds); then the schedulers. A service still running `stop_timeout`
seconds after its signal is killed (SIGKILL; its executor workers die with it).

It lives with the services, below the client and the command line: it starts the services' own
processes and reads their ready line (ready_line.py), a contract between processes; the CLI
(`sparrow local`, `sparrow experiment`) builds on it, never the other way round.

Error handling: a bad argument raises ValueError at construction. A service that exits or prints
nothing within `startup_timeout` seconds stops the whole cluster and raises RuntimeError with its
exit status (its one-line error is on this process's standard error).
"""

from __future__ import annotations

import getpass
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import IO

from .. import views
from ..wire.auth import new_secret
from ..wire.certs import local_certs
from ..wire.resources import format_resources, parse_resources
from ..wire.tls import TLS
from .arguments import check_counts
from .config import NODE_MONITOR_SETTINGS, SCHEDULER_SETTINGS, NodeMonitorConfig, SchedulerConfig, setting_flags
from .cpus import available_cpus, can_pin, format_cpu_list, local_layout
from .logsetup import LOG_LEVELS
from .processes import child_env, describe_exit
from .ready_line import parse_ready_line

SPARROW = [sys.executable, "-m", "sparrow_runtime.cli.main"]
KILL_GRACE = 2.0  # seconds a service may take to exit once its drain is over
TRANSPORTS = ("tcp", "unix")  # loopback TCP, or Unix domain sockets in a private folder
# a hop over a Unix socket costs about half a loopback TCP one (docs/runtime-wire.md): the default where there are any
DEFAULT_TRANSPORT = "unix" if hasattr(socket, "AF_UNIX") else "tcp"
# the settings a cluster passes on (ids, the links between its services, slots and labels are its own)
CLUSTER_SCHEDULER_SETTINGS = {
    field: setting for field, setting in SCHEDULER_SETTINGS.items() if field not in ("scheduler_id", "node_monitors")
}
CLUSTER_NODE_MONITOR_SETTINGS = {
    field: setting
    for field, setting in NODE_MONITOR_SETTINGS.items()
    if field not in ("schedulers", "node_id", "slots", "labels", "resources")
}


class LocalCluster:
    """Start `schedulers` schedulers and `node_monitors` node monitors of `slots` slots each.

    `node_monitor` (a config.NodeMonitorConfig: executor, queue policy and weights, pipelining, give-back,
    stealing, timeouts, value limits, ...) is every node monitor's settings, and `scheduler` (a
    config.SchedulerConfig: probe ratio, bind_idle, timeouts, result delay, ...) every scheduler's; each
    service gets the fields that differ from their defaults as flags (config.setting_flags: the others come
    from the services' own sources, SPARROW_* variables and SPARROW_CONFIG). Ids, addresses, links, slots and
    labels are the cluster's own: `labels` (optional) gives each node monitor its labels, by position;
    `resources` (optional) what each offers its tasks besides their slots (one {name: amount} or
    "name=amount,..." for all, or one per node monitor, None: detected; docs/resources.md). The services log at
    `log_level` (debug, info, warning, error) to this process's standard error. Node monitor i has id
    "nm-i", so constraints can name it. `share_cpus=False` (default) runs each node monitor and its
    executors on its own share of the CPUs (`node_monitor_cpus`), and the schedulers on one CPU each
    (`scheduler_cpus`, from the last); True (always, where the system cannot pin) lets every service
    use every CPU. `dashboard` (default True) serves each scheduler's dashboard and metrics on a free
    loopback port (docs/dashboard.md). Attributes once started: `schedulers`, `node_monitors`
    (addresses "unix:PATH", or "host:port" on tcp), `node_ids`, `scheduler_ids` (in the order of `schedulers`),
    `node_monitor_pids`, `pids`, `secret`, `dashboard_urls` and `dashboard_url` (the first
    scheduler's), and `metrics_urls` (address -> metrics URL of each service that serves metrics,
    e.g. with SPARROW_METRICS_PORT=0 in the environment).
    `transport`: "unix" (the default where the system has Unix domain sockets: the services and clients
    of this host only, addresses "unix:PATH" in a private 0700 folder; a hop costs about half a loopback
    TCP one, docs/runtime-wire.md) or "tcp" (loopback TCP, addresses "127.0.0.1:PORT"; the default
    elsewhere). The node monitors' data listeners are Unix sockets either way (where the system has them):
    values in memory files pass between them as the files themselves (docs/runtime-dask.md, "Values stay
    where they were made").

    `tls`: False (default) runs the services --insecure, with the shared `secret` (one trusted host:
    every process is this user's and listens on loopback only); True on TLS with a CA made for this
    cluster; a folder path on TLS with the CA kept there (made if missing). `client_tls` is then the
    credentials of a client (an admin of this host's user: it may run jobs as any user), and
    `credentials` is what to pass to Client or SparrowExecutor either way.
    """

    def __init__(
        self,
        schedulers: int = 1,
        node_monitors: int = 2,
        slots: int = 1,
        *,
        node_monitor: NodeMonitorConfig | None = None,
        scheduler: SchedulerConfig | None = None,
        labels: Sequence[Sequence[str]] | None = None,
        resources: str | Mapping[str, object] | Sequence[str | Mapping[str, object] | None] | None = None,
        share_cpus: bool = False,
        log_level: str = "warning",
        dashboard: bool = True,
        startup_timeout: float = 30.0,
        stop_timeout: float = 5.0,
        transport: str | None = None,
        tls: bool | str | os.PathLike = False,
    ) -> None:
        check_counts(schedulers=schedulers, node_monitors=node_monitors, slots=slots)
        if transport is None:
            transport = DEFAULT_TRANSPORT
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        if scheduler is not None and not isinstance(scheduler, SchedulerConfig):
            raise ValueError(f"scheduler must be a SchedulerConfig, got {type(scheduler).__name__}")
        if node_monitor is not None and not isinstance(node_monitor, NodeMonitorConfig):
            raise ValueError(f"node_monitor must be a NodeMonitorConfig, got {type(node_monitor).__name__}")
        if not isinstance(tls, (bool, str, os.PathLike)):
            raise ValueError(f"tls must be True, False or a folder path, got {tls!r}")
        if log_level.lower() not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
        if labels is not None and len(labels) != node_monitors:
            raise ValueError(f"labels must have one entry per node monitor ({node_monitors}), got {len(labels)}")
        self.n_schedulers = schedulers
        self.n_node_monitors = node_monitors
        self.slots = slots
        self.node_monitor = node_monitor or NodeMonitorConfig()
        self.labels = [list(x) for x in labels] if labels is not None else [[] for _ in range(node_monitors)]
        given = [resources] * node_monitors if resources is None or isinstance(resources, (str, Mapping)) else resources
        if len(given) != node_monitors:
            raise ValueError(f"resources must have one entry per node monitor ({node_monitors}), got {len(given)}")
        # each node monitor's capacity in units (None: detected); a bad amount is a ValueError now
        self.resources = [None if r is None else parse_resources(r) for r in given]
        self.scheduler = scheduler or SchedulerConfig()
        self.log_level = log_level.lower()
        cpus = available_cpus()
        self.share_cpus = share_cpus or not can_pin()
        if self.share_cpus:
            self.scheduler_cpus, self.node_monitor_cpus = [cpus] * schedulers, [cpus] * node_monitors
        else:
            self.scheduler_cpus, self.node_monitor_cpus = local_layout(schedulers, node_monitors, cpus)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.transport = transport
        self._socket_dir: str | None = None  # the folder of the services' Unix sockets (data listeners at least)
        self.secret = new_secret()
        self.tls = tls
        self.client_tls: TLS | None = None
        self._tls_files: dict[str, tuple[str, str, str]] = {}
        self._tls_dir: str | None = None  # a CA made for this cluster, removed on close
        self.schedulers: list[str] = []
        self.node_monitors: list[str] = []
        self.node_ids = [f"nm-{i}" for i in range(node_monitors)]
        self.scheduler_ids = [f"scheduler-{i}" for i in range(schedulers)]
        self.node_monitor_pids: list[int] = []
        self.metrics_urls: dict[str, str] = {}
        self.dashboard = dashboard
        self.dashboard_urls: list[str] = []
        self._schedulers: list[subprocess.Popen] = []
        self._node_monitors: list[subprocess.Popen] = []

    @property
    def credentials(self) -> dict:
        """The keyword arguments that let Client or SparrowExecutor in: {"tls": ...} or {"secret": ...}."""
        return {"tls": self.client_tls} if self.client_tls is not None else {"secret": self.secret}

    @property
    def dashboard_url(self) -> str | None:
        """The first scheduler's dashboard, once started; None with dashboard=False."""
        return self.dashboard_urls[0] if self.dashboard_urls else None

    @property
    def pids(self) -> list[int]:
        """The process ids of the running services (schedulers first)."""
        return [process.pid for process in self._schedulers + self._node_monitors]

    def __repr__(self) -> str:
        return views.cluster_repr(self)

    def _repr_html_(self) -> str:
        return views.cluster_html(self)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the schedulers (together), then the node monitors (together); returns once every one
        is ready (a node monitor: registered with every scheduler)."""
        secret_dir = tempfile.mkdtemp(prefix="sparrow-local-")  # mode 0700
        secret_file = os.path.join(secret_dir, "secret")
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.secret)
        common = ["--log-level", self.log_level, "--exit-with-parent"]
        if self.transport == "unix" or hasattr(socket, "AF_UNIX"):
            self._socket_dir = tempfile.mkdtemp(prefix="sparrow-sock-")  # mode 0700
        try:
            credentials = self._credential_args(secret_file)
            scheduler_common = common + credentials["scheduler"]
            started = [
                self._start(self._scheduler_args(i) + self._listen(f"scheduler-{i}") + scheduler_common)
                for i in range(self.n_schedulers)
            ]
            self._schedulers = [process for process, _ in started]
            self.schedulers = self._await_ready(started)
            node_common = common + credentials["node-monitor"]
            started = [
                self._start(
                    self._node_monitor_args(i)
                    + self._listen(self.node_ids[i])
                    + self._data_listen(self.node_ids[i])
                    + node_common
                )
                for i in range(self.n_node_monitors)
            ]
            self._node_monitors = [process for process, _ in started]
            self.node_monitors = self._await_ready(started)
            self.node_monitor_pids = [process.pid for process in self._node_monitors]
        except BaseException:
            self.close()
            raise
        finally:  # every service has read it: no copy is left for a task to find
            shutil.rmtree(secret_dir, ignore_errors=True)

    def _listen(self, name: str) -> list[str]:
        if self.transport != "unix" or self._socket_dir is None:
            return ["--listen", "127.0.0.1:0"]
        return ["--listen", "unix:" + os.path.join(self._socket_dir, f"{name}.sock")]

    def _data_listen(self, name: str) -> list[str]:
        """A node monitor's data listener: a Unix socket where the system has them (beside a unix listen,
        its default is that already)."""
        if self.transport == "unix" or self._socket_dir is None:
            return []
        return ["--data-listen", "unix:" + os.path.join(self._socket_dir, f"{name}.data")]

    def _credential_args(self, secret_file: str) -> dict[str, list[str]]:
        """Each role's credential flags: its TLS files (made now if needed), or --insecure and the secret."""
        if self.tls is False:
            insecure = ["--insecure", "--secret-file", secret_file]
            return {"scheduler": insecure, "node-monitor": insecure}
        if self.tls is True:
            if self._tls_dir is None:
                self._tls_dir = tempfile.mkdtemp(prefix="sparrow-local-tls-")
            folder = self._tls_dir
        else:
            folder = os.fspath(self.tls)
        self._tls_files = local_certs(folder, getpass.getuser())
        self.client_tls = TLS(*self._tls_files["client"])
        # their metrics and dashboards stay plain HTTP on loopback, for the owner's browser
        return {
            role: ["--tls-ca", files[0], "--tls-cert", files[1], "--tls-key", files[2], "--metrics-insecure"]
            for role, files in self._tls_files.items()
            if role != "client"
        }

    @property
    def client_tls_files(self) -> tuple[str, str, str] | None:
        """The client's (CA, certificate, key) paths, on TLS once started (for `sparrow local`'s state)."""
        return self._tls_files.get("client")

    def _scheduler_args(self, i: int) -> list[str]:
        args = ["scheduler", "--id", self.scheduler_ids[i], *self._cpus_args(self.scheduler_cpus[i])]
        args += setting_flags(self.scheduler, CLUSTER_SCHEDULER_SETTINGS)
        if self.dashboard:  # its HTTP port on loopback, given in its ready line
            args += ["--metrics-port", "0"]
        return args

    def _node_monitor_args(self, i: int) -> list[str]:
        args = ["node-monitor", "--id", self.node_ids[i], "--slots", str(self.slots)]
        args += self._cpus_args(self.node_monitor_cpus[i])
        args += ["--drain-timeout", str(self.stop_timeout)]
        args += setting_flags(self.node_monitor, CLUSTER_NODE_MONITOR_SETTINGS)
        for address in self.schedulers:
            args += ["--scheduler", address]
        for label in self.labels[i]:
            args += ["--label", label]
        offered = self.resources[i]
        if offered is not None:
            args += ["--resources", format_resources(offered) if offered else ""]
        return args

    def _cpus_args(self, cpus: list[int]) -> list[str]:
        return [] if self.share_cpus else ["--cpus", format_cpu_list(cpus)]

    def _start(self, args: list[str]) -> tuple[subprocess.Popen, str]:
        process = subprocess.Popen(
            [*SPARROW, *args],
            stdin=subprocess.PIPE,  # held open while we live: --exit-with-parent
            stdout=subprocess.PIPE,
            env=child_env(),
            start_new_session=True,  # no signal of this process's terminal reaches it: close() stops it
        )
        return process, f"{args[0]} {args[2]}"

    def _await_ready(self, started: list[tuple[subprocess.Popen, str]]) -> list[str]:
        """The address in each service's ready line, once all are printed; RuntimeError if one exits
        or stays silent until the startup timeout."""
        deadline = time.monotonic() + self.startup_timeout
        lines = {_stdout(process).fileno(): b"" for process, _ in started}
        names = {_stdout(process).fileno(): (process, name) for process, name in started}
        waiting = set(lines)
        while waiting:
            ready, _, _ = select.select(list(waiting), [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                name = names[min(waiting)][1]
                raise RuntimeError(f"{name} printed no address within {self.startup_timeout} s")
            for fd in ready:
                chunk = os.read(fd, 4096)
                process, name = names[fd]
                if not chunk:
                    process.wait(self.stop_timeout)
                    raise RuntimeError(f"{name} exited during startup ({describe_exit(process.returncode)})")
                lines[fd] += chunk
                if lines[fd].endswith(b"\n"):
                    waiting.discard(fd)
        addresses = []
        for process, name in started:
            parsed = parse_ready_line(lines[_stdout(process).fileno()].decode())
            if parsed is None:
                raise RuntimeError(f"{name} printed {lines[_stdout(process).fileno()]!r}, not its ready line")
            address, metrics_url, dashboard_url = parsed
            addresses.append(address)
            if metrics_url is not None:
                self.metrics_urls[address] = metrics_url
            if dashboard_url is not None:
                self.dashboard_urls.append(dashboard_url)
        return addresses

    def close(self) -> None:
        """Stop the node monitors (they drain), then the schedulers; idempotent."""
        for group in (self._node_monitors, self._schedulers):
            _stop(group, self.stop_timeout)
            group.clear()
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        if self._tls_dir is not None:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None


def _stop(processes: list[subprocess.Popen], timeout: float) -> None:
    """SIGTERM each process, wait up to `timeout` seconds (and KILL_GRACE) for all, SIGKILL the rest."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout + KILL_GRACE
    for process in processes:
        try:
            process.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            process.kill()  # its executor workers die with it
            process.wait()
        for pipe in (process.stdout, process.stdin):
            if pipe is not None:
                pipe.close()


def _stdout(process: subprocess.Popen) -> IO[bytes]:
    """The pipe of a service's standard output, which _start opens."""
    assert process.stdout is not None
    return process.stdout
