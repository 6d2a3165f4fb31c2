"""The settings of each `sparrow` command (see config.py for how they are read, and
docs/configuration.md, which lists them)."""

from __future__ import annotations

from .config import (
    ADDRESSES,
    BOOLEAN,
    CPU_LIST,
    LISTEN_ADDRESS,
    TEXT,
    TEXTS,
    WEIGHTS,
    Setting,
    choice,
    integer,
    number,
)
from ..framing import DEFAULT_MAX_FRAME
from ..logsetup import LOG_LEVELS
from ..node_monitor import DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_SCHEDULER_TIMEOUT
from ..node_monitor_logic import POLICIES
from ..outcome_batching import DEFAULT_RESULT_DELAY
from ..scheduler import DEFAULT_NODE_TIMEOUT
from ..scheduler_logic import DEFAULT_PROBE_RATIO


def _log_level(default: str) -> Setting:
    return Setting("log_level", choice(*LOG_LEVELS), default, "log level: " + ", ".join(LOG_LEVELS))


SECRET_FILE = Setting(
    "secret_file", TEXT, help="file holding the cluster secret (or set SPARROW_SECRET)", metavar="FILE"
)
MAX_FRAME = Setting("max_frame", integer(16), DEFAULT_MAX_FRAME, "largest message accepted, in bytes", "BYTES")
METRICS_PORT = Setting(
    "metrics_port", integer(0), help="serve Prometheus metrics on this port (0: any free port; off by default)",
    metavar="PORT",
)  # fmt: skip
SCHEDULER = Setting(
    "scheduler", ADDRESSES, help="a scheduler's address (repeatable)", metavar="HOST:PORT"
)
POLICY = Setting("policy", choice(*POLICIES), "fifo", "reservation queue policy: " + ", ".join(POLICIES))
WEIGHT = Setting("weight", WEIGHTS, {}, "a user's share under --policy fair (repeatable)", "USER=WEIGHT")
EXECUTOR = Setting(
    "executor", choice("process", "thread"), "process", "run tasks in worker processes or threads"
)
PROBE_RATIO = Setting("probe_ratio", number(1.0), DEFAULT_PROBE_RATIO, "probes per task (batch sampling)", "D")


def _cpus(what: str) -> Setting:
    help_text = f"run {what} only on these CPUs, like 0-3,6 (default: all it may use)"
    return Setting("cpus", CPU_LIST, help=help_text, metavar="LIST")


SCHEDULER_SETTINGS = (
    Setting("listen", LISTEN_ADDRESS, ("0.0.0.0", 7077), "address to listen on", "HOST:PORT"),
    Setting("id", TEXT, help="this scheduler's id (default: scheduler@HOST:PORT)"),
    PROBE_RATIO,
    Setting("node_monitor", ADDRESSES, [], "a node monitor to dial (repeatable; they usually dial in)", "HOST:PORT"),
    Setting("node_timeout", number(0.0, open_low=True), DEFAULT_NODE_TIMEOUT, "drop a node monitor silent this long", "S"),
    Setting("seed", integer(0), help="seed of the probe sampling (default: random)"),
    Setting(
        "result_delay", number(0.0), DEFAULT_RESULT_DELAY,
        "seconds a task's outcome may wait to share a write to its client (a job's last never waits; 0: off)", "S",
    ),
    _cpus("the scheduler"),
    MAX_FRAME,
    SECRET_FILE,
    _log_level("info"),
    METRICS_PORT,
)  # fmt: skip

NODE_MONITOR_SETTINGS = (
    SCHEDULER,
    Setting("listen", LISTEN_ADDRESS, ("127.0.0.1", 0), "address to listen on, for schedulers that dial", "HOST:PORT"),
    Setting("id", TEXT, help="this node monitor's id, unique in the cluster (default: the host name)"),
    Setting("slots", integer(1), help="tasks run at once (default: the CPU count)", metavar="N"),
    Setting("label", TEXTS, [], "a label constraints can require (repeatable)", "LABEL"),
    POLICY,
    WEIGHT,
    EXECUTOR,
    Setting("heartbeat_interval", number(0.0, open_low=True), DEFAULT_HEARTBEAT_INTERVAL, "seconds between heartbeats", "S"),
    Setting("scheduler_timeout", number(0.0, open_low=True), DEFAULT_SCHEDULER_TIMEOUT, "drop a scheduler silent this long", "S"),
    Setting("drain_timeout", number(0.0), 10.0, "on SIGTERM/Ctrl-C, wait this long for running tasks to finish", "S"),
    _cpus("the node monitor and its executors"),
    MAX_FRAME,
    SECRET_FILE,
    _log_level("info"),
    METRICS_PORT,
)  # fmt: skip

LOCAL_SETTINGS = (
    Setting("schedulers", integer(1), 1, "schedulers to start", "N"),
    Setting("node_monitors", integer(1), 4, "node monitors to start", "N"),
    Setting("slots", integer(1), 4, "slots per node monitor", "N"),
    POLICY,
    WEIGHT,
    EXECUTOR,
    PROBE_RATIO,
    Setting(
        "share_cpus", BOOLEAN, False, "let every service use every CPU, instead of giving each node monitor its own share"
    ),
    _log_level("warning"),
    Setting("demo", BOOLEAN, False, "run the demo workload, print its report and stop"),
    Setting("load", number(0.0, 1.0, open_low=True), 0.8, "demo: offered load, a fraction of the slots"),
    Setting("duration", number(0.0, open_low=True), 15.0, "demo: seconds during which jobs arrive", "S"),
    Setting("min_tasks", integer(1), 10, "demo: fewest tasks in a job", "N"),
    Setting("max_tasks", integer(1), 100, "demo: most tasks in a job", "N"),
    Setting("task_ms", number(0.0, open_low=True), 20.0, "demo: mean task duration, milliseconds", "MS"),
    Setting("seed", integer(0), help="demo: seed of the workload (default: random)"),
    Setting("plot", TEXT, help="demo: draw the response-time CDF against the ideal to FILE (.png, .svg, .pdf)", metavar="FILE"),
)  # fmt: skip

SUBMIT_SETTINGS = (
    SCHEDULER,
    SECRET_FILE,
    Setting("tasks", integer(1), 1, "tasks in the job", "N"),
    Setting("user", TEXT, "", "the user the job runs as (fair sharing)"),
    Setting("priority", integer(), 0, "the job's priority (lower runs first)"),
    Setting("probe_ratio", number(1.0), help="probes per task (default: the scheduler's)", metavar="D"),
    Setting("timeout", number(0.0, open_low=True), help="give up after this many seconds (default: wait)", metavar="S"),
    Setting("traceback", BOOLEAN, False, "print the remote traceback of a failed callable"),
    _log_level("warning"),
)  # fmt: skip

STATUS_SETTINGS = (
    SCHEDULER,
    SECRET_FILE,
    Setting("json", BOOLEAN, False, "print JSON instead of tables"),
    _log_level("warning"),
)

COMMANDS = {
    "scheduler": SCHEDULER_SETTINGS,
    "node-monitor": NODE_MONITOR_SETTINGS,
    "local": LOCAL_SETTINGS,
    "submit": SUBMIT_SETTINGS,
    "status": STATUS_SETTINGS,
}
