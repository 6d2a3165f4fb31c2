"""The settings of each `sparrow` command (see config.py for how they are read, and
docs/configuration.md, which lists them)."""

from __future__ import annotations

from sparrow_core import QUEUE_POLICIES, check_probe_ratio

from ..client.core import DEFAULT_RETRIES
from ..client.output import OUTPUT_MODES
from ..data.code_archive import LIMITS
from ..data.code_cache import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ENTRIES
from ..services.config import (
    DEFAULT_CLIENT_TIMEOUT,
    DEFAULT_GIVE_BACK,
    DEFAULT_HEARTBEAT_INTERVAL,
    DEFAULT_NODE_TIMEOUT,
)
from ..services.logsetup import LOG_LEVELS
from ..services.node_monitor_logic import GIVE_BACK_FACTOR, GIVE_BACK_MIN
from ..services.outcome_batching import DEFAULT_RESULT_DELAY
from ..services.output_limit import DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_RATE
from ..services.pipeline import DEFAULT_PIPELINE_DEPTH, DEFAULT_PIPELINE_MODE, MAX_PIPELINE_DEPTH, PIPELINE_MODES
from ..services.scheduler_logic import (
    DEFAULT_BIND_IDLE,
    DEFAULT_CLIENT_GRACE,
    DEFAULT_MAX_CLIENT_TASKS,
    DEFAULT_PLACEMENT_TIMEOUT,
    DEFAULT_PROBE_RATIO,
)
from ..services.user_metrics import DEFAULT_METRICS_USERS
from ..wire.certs import DEFAULT_CA_DAYS, DEFAULT_DAYS
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.limits import DEFAULT_INLINE_LIMIT, DEFAULT_MAX_VALUE, MAX_OUTPUT, SAMPLINGS
from ..wire.liveness import DEFAULT_SCHEDULER_TIMEOUT
from .config import (
    ADDRESSES,
    BOOLEAN,
    CPU_LIST,
    LISTEN_ADDRESS,
    REQUEST,
    RESEARCH,
    RESOURCES,
    TEXT,
    TEXTS,
    WEIGHTS,
    Kind,
    Retired,
    Setting,
    choice,
    integer,
    number,
)


def _log_level(default: str) -> Setting:
    return Setting("log_level", choice(*LOG_LEVELS), default, "log level: " + ", ".join(LOG_LEVELS))


def _secret_file(unset: str) -> Setting:
    return Setting(
        "secret_file",
        TEXT,
        help="file holding the cluster secret, mode 0600 (or set SPARROW_SECRET)",
        metavar="FILE",
        unset=unset,
    )


def _tls(unset: str) -> tuple[Setting, ...]:
    return (
        Setting(
            "tls_ca",
            TEXT,
            help="the cluster CA's certificate, for TLS (sparrow certs init)",
            metavar="FILE",
            unset=unset,
        ),
        Setting(
            "tls_cert",
            TEXT,
            help="this peer's certificate, signed by the CA (sparrow certs issue)",
            metavar="FILE",
            unset=unset,
        ),
        Setting("tls_key", TEXT, help="this peer's private key, mode 0600", metavar="FILE", unset=unset),
    )


INSECURE = Setting(
    "insecure",
    BOOLEAN,
    False,
    "no TLS: peers prove only that they know the cluster secret, and frames are neither encrypted nor "
    "authenticated (a single trusted host only)",
)


def _scheduler(unset: str) -> Setting:
    return Setting(
        "scheduler",
        ADDRESSES,
        help="a scheduler's address, HOST:PORT or unix:PATH (repeatable)",
        metavar="HOST:PORT",
        unset=unset,
    )


MAX_FRAME = Setting("max_frame", integer(16), DEFAULT_MAX_FRAME, "largest message accepted, in bytes", "BYTES")
METRICS_PORT = Setting(
    "metrics_port",
    integer(0),
    help="serve Prometheus metrics on this port of the --listen host (0: any free port)",
    metavar="PORT",
    unset="off",
)
METRICS_LISTEN = Setting(
    "metrics_listen",
    LISTEN_ADDRESS,
    help="serve Prometheus metrics at this address instead",
    metavar="HOST:PORT",
    unset="off",
)
METRICS_USERS = Setting(
    "metrics_users",
    integer(0),
    DEFAULT_METRICS_USERS,
    'users with metrics series of their own (the first seen; later ones are counted as user="other")',
    "N",
)
METRICS_INSECURE = Setting(
    "metrics_insecure",
    BOOLEAN,
    False,
    "serve metrics and the dashboard over plain HTTP to anyone even with TLS (with TLS they are HTTPS for "
    "admin and monitor certificates only)",
)
EXIT_WITH_PARENT = Setting(
    "exit_with_parent",
    BOOLEAN,
    False,
    "stop as on SIGTERM once standard input reaches end of file (the parent holding the other end of a pipe is gone)",
)
POLICY = Setting("policy", choice(*QUEUE_POLICIES), "fifo", "reservation queue policy: " + ", ".join(QUEUE_POLICIES))
WEIGHT = Setting("weight", WEIGHTS, {}, "a user's share under --policy fair (repeatable)", "USER=WEIGHT")
EXECUTOR = Setting("executor", choice("process", "thread"), "process", "run tasks in worker processes or threads")
PIPELINE = Setting(
    "pipeline",
    choice(*PIPELINE_MODES),
    DEFAULT_PIPELINE_MODE,
    "pipelined late binding: while every slot is busy, ask for the next tasks ahead so the scheduler round trip "
    "overlaps the running task; off: plain late binding; gated: only while each of the node's last 8 tasks ran "
    "under 5 ms; steady: gated, and one deep from a task's start while the last 8 run times are within 3x; jit: "
    "gated, and one deep just before a task's predicted end while they are within 1.5x; always: one deep whatever "
    "the tasks (docs/pipelining.md)",
    "MODE",
    group=RESEARCH,
)
PIPELINE_DEPTH = Setting(
    "pipeline_depth",
    integer(1, MAX_PIPELINE_DEPTH),
    DEFAULT_PIPELINE_DEPTH,
    "requests asked ahead per slot held while the recent tasks ran short (no-op tasks: each task bound ahead waits "
    "out the ones bound before it); beyond one per running task, at most half of what the node holds of a job "
    "(docs/pipelining.md)",
    "N",
    group=RESEARCH,
)
# The pipelining switches that --pipeline MODE replaced ("no_pipeline" retires --no-pipeline, the off switch of the
# boolean that --pipeline was).
PIPELINE_RETIRED = (
    Retired("no_pipeline", "use --pipeline off"),
    Retired("pipeline_always", "use --pipeline always"),
    Retired("pipeline_jit", "use --pipeline jit"),
    Retired("pipeline_steady", "use --pipeline steady (the default), or --pipeline gated for the gate alone"),
)
GIVE_BACK = Setting(
    "give_back",
    BOOLEAN,
    DEFAULT_GIVE_BACK,
    "with --pipeline other than off: a task bound ahead that waits behind running tasks which all overran (ran "
    f"{GIVE_BACK_FACTOR:g}x the longest of the node's last 8 tasks, and at least {GIVE_BACK_MIN * 1000:g} ms) goes "
    "back to its scheduler, which gives it to the next node monitor that asks; nothing is asked ahead behind such a "
    'task (docs/pipelining.md, "Give-back")',
    group=RESEARCH,
)
BIND_IDLE = Setting(
    "bind_idle",
    BOOLEAN,
    DEFAULT_BIND_IDLE,
    "send a job's first tasks with its reservations to node monitors this scheduler believes idle (nothing of its "
    "own there, no other work in their last heartbeat), saving their GetTask round trip: a slot's worth, and while "
    "their recent tasks ran under 5 ms half of the job's other reservations there too, as their pipelining would ask "
    "(a 10-task job of short tasks on 2 idle node monitors goes whole); one that is busy after all runs such a task "
    "in its next free slot, ahead of its queue; --no-bind-idle: late binding for every task (docs/runtime.md)",
    group=RESEARCH,
)

STEAL = Setting(
    "steal",
    BOOLEAN,
    False,
    "work stealing: an idle node monitor (a free slot, an empty queue) asks two random peers (its schedulers tell it "
    "them) and takes reservations of unconstrained jobs from the one queued behind the longest-running task "
    "(Hawk); off by default: it pays at high load with short and long jobs mixed, and its messages cost CPU where "
    "the hosts have none to spare (docs/runtime.md, Work stealing)",
    group=RESEARCH,
)


def _probe_ratio(value: str | float) -> float:
    try:
        return check_probe_ratio(float(value))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"expected a probe ratio: {exc}") from None


PROBE_RATIO_KIND = Kind("a finite number >= 1", _probe_ratio, _probe_ratio)  # sparrow_core's own check
PROBE_RATIO = Setting(
    "probe_ratio", PROBE_RATIO_KIND, DEFAULT_PROBE_RATIO, "probes per task (batch sampling)", "D", group=RESEARCH
)


def _cpus(what: str) -> Setting:
    return Setting(
        "cpus", CPU_LIST, help=f"run {what} only on these CPUs, like 0-3,6", metavar="LIST", unset="all it may use"
    )


SCHEDULER_SETTINGS = (
    Setting(
        "listen",
        LISTEN_ADDRESS,
        ("127.0.0.1", 7077),
        "address to listen on (port 0: any free port; other hosts need 0.0.0.0:7077 or this host's address; "
        "unix:PATH: a Unix socket, for this host's node monitors and clients only)",
        "HOST:PORT",
    ),
    Setting("id", TEXT, help="this scheduler's id", unset="scheduler@HOST:PORT"),
    PROBE_RATIO,
    BIND_IDLE,
    Setting("node_monitor", ADDRESSES, [], "a node monitor to dial (repeatable; they usually dial in)", "HOST:PORT"),
    Setting(
        "node_timeout", number(0.0, open_low=True), DEFAULT_NODE_TIMEOUT, "drop a node monitor silent this long", "S"
    ),
    Setting(
        "client_timeout",
        number(0.0, open_low=True),
        DEFAULT_CLIENT_TIMEOUT,
        "drop a client silent this long (clients heartbeat several times a second)",
        "S",
    ),
    Setting(
        "client_grace",
        number(0.0),
        DEFAULT_CLIENT_GRACE,
        "stop a lost client's running tasks (where node monitors can) once it is not back within this",
        "S",
    ),
    Setting(
        "placement_timeout",
        number(0.0),
        DEFAULT_PLACEMENT_TIMEOUT,
        "how long a job waits for a node monitor that can take it before its tasks fail (0: fail at once)",
        "S",
    ),
    Setting(
        "max_client_tasks",
        integer(1),
        DEFAULT_MAX_CLIENT_TASKS,
        "unfinished tasks one client may have here; a job past it is rejected",
        "N",
    ),
    Setting("seed", integer(0), help="seed of the probe sampling", unset="random", group=RESEARCH),
    Setting(
        "result_delay",
        number(0.0),
        DEFAULT_RESULT_DELAY,
        "seconds a task's outcome may wait to share a write to its client (a job's last never waits; 0: off)",
        "S",
        group=RESEARCH,
    ),
    _cpus("the scheduler"),
    MAX_FRAME,
    *_tls("none: --insecure is required"),
    INSECURE,
    _secret_file("none"),
    _log_level("info"),
    METRICS_PORT,
    METRICS_LISTEN,
    METRICS_USERS,
    METRICS_INSECURE,
    EXIT_WITH_PARENT,
)

NODE_MONITOR_SETTINGS = (
    _scheduler("none: required"),
    Setting(
        "listen",
        LISTEN_ADDRESS,
        ("127.0.0.1", 0),
        "address to listen on, for schedulers that dial (or unix:PATH)",
        "HOST:PORT",
    ),
    Setting(
        "id",
        TEXT,
        help="this node monitor's id, unique in the cluster",
        unset="HOST:PORT, this host's name and the port or socket path it listens on",
    ),
    Setting("slots", integer(1), help="tasks run at once", metavar="N", unset="the CPU count"),
    Setting(
        "resources",
        RESOURCES,
        help="what this host offers its tasks besides their slots (docs/resources.md), like "
        "cpus=16,memory=64G,gpu=2,license=3",
        metavar="NAME=AMOUNT,...",
        unset="its CPUs and memory, and its GPUs where the host shows them",
    ),
    Setting("label", TEXTS, [], "a label constraints can require (repeatable)", "LABEL"),
    POLICY,
    WEIGHT,
    EXECUTOR,
    PIPELINE,
    PIPELINE_DEPTH,
    GIVE_BACK,
    STEAL,
    Setting(
        "task_user",
        TEXT,
        help="run tasks as this OS user (process executors), so they cannot read this "
        "service's key, certificate or secret; a pattern like 'sparrow-{user}' gives each cluster user an "
        "OS user of its own; needs root or CAP_SETUID, CAP_SETGID, CAP_KILL",
        metavar="USER",
        unset="this service's user",
    ),
    Setting(
        "heartbeat_interval", number(0.0, open_low=True), DEFAULT_HEARTBEAT_INTERVAL, "seconds between heartbeats", "S"
    ),
    Setting(
        "scheduler_timeout",
        number(0.0, open_low=True),
        DEFAULT_SCHEDULER_TIMEOUT,
        "drop a scheduler silent this long",
        "S",
    ),
    Setting("drain_timeout", number(0.0), 10.0, "on SIGTERM/Ctrl-C, wait this long for running tasks to finish", "S"),
    _cpus("the node monitor and its executors"),
    MAX_FRAME,
    Setting(
        "data_listen",
        LISTEN_ADDRESS,
        help="address of the data listener, where clients and node monitors fetch the results kept here (or unix:PATH)",
        metavar="HOST:PORT",
        unset="the --listen host and any free port, or PATH.data beside a unix: --listen",
    ),
    Setting(
        "inline_limit",
        integer(0),
        DEFAULT_INLINE_LIMIT,
        "a result over this many bytes stays in this node monitor's memory; its outcome carries a reference",
        "BYTES",
    ),
    Setting(
        "memory_limit",
        integer(0),
        help="bytes of results kept here at most; past it a new result fails with a reason naming the sizes",
        metavar="BYTES",
        unset="a quarter of this host's memory",
    ),
    Setting(
        "max_value",
        integer(0),
        DEFAULT_MAX_VALUE,
        "largest value kept or transferred (in chunks), and most bytes of inputs for one task",
        "BYTES",
    ),
    Setting(
        "code_cache_bytes",
        integer(LIMITS.max_bytes),
        DEFAULT_CACHE_BYTES,
        "bytes of the code jobs ship kept unpacked here (the least recently used not in use go first)",
        "BYTES",
    ),
    Setting(
        "code_cache_entries",
        integer(1),
        DEFAULT_CACHE_ENTRIES,
        "archives of the code jobs ship kept unpacked here",
        "N",
    ),
    Setting(
        "output_cap",
        integer(0, MAX_OUTPUT),
        DEFAULT_OUTPUT_CAP,
        "bytes of each of a task's stdout and stderr sent to its client (past it: cut, with a marker); 0: none "
        "captured, tasks print to this service's stderr",
        "BYTES",
    ),
    Setting(
        "output_rate",
        integer(1),
        DEFAULT_OUTPUT_RATE,
        "bytes a second of task output this node monitor sends, averaged (past it: cut, with a marker)",
        "BYTES",
    ),
    *_tls("none: --insecure is required"),
    INSECURE,
    _secret_file("none"),
    _log_level("info"),
    METRICS_PORT,
    METRICS_LISTEN,
    METRICS_INSECURE,
    EXIT_WITH_PARENT,
)

LOCAL_SETTINGS = (
    Setting("schedulers", integer(1), 1, "schedulers to start", "N"),
    Setting("node_monitors", integer(1), 4, "node monitors to start", "N"),
    Setting("slots", integer(1), 4, "slots per node monitor", "N"),
    POLICY,
    WEIGHT,
    EXECUTOR,
    PIPELINE,
    PIPELINE_DEPTH,
    GIVE_BACK,
    STEAL,
    PROBE_RATIO,
    BIND_IDLE,
    Setting(
        "share_cpus",
        BOOLEAN,
        False,
        "let every service use every CPU, instead of giving each node monitor its own share",
        group=RESEARCH,
    ),
    Setting(
        "insecure",
        BOOLEAN,
        False,
        "no TLS: the services authenticate with a shared secret only (frames neither encrypted nor authenticated)",
    ),
    _log_level("warning"),
    Setting("demo", BOOLEAN, False, "run the demo workload, print its report and stop"),
    Setting("load", number(0.0, 1.0, open_low=True), 0.8, "demo: offered load, a fraction of the slots"),
    Setting("duration", number(0.0, open_low=True), 15.0, "demo: seconds during which jobs arrive", "S"),
    Setting("min_tasks", integer(1), 10, "demo: fewest tasks in a job", "N"),
    Setting("max_tasks", integer(1), 100, "demo: most tasks in a job", "N"),
    Setting("task_ms", number(0.0, open_low=True), 20.0, "demo: mean task duration, milliseconds", "MS"),
    Setting("seed", integer(0), help="demo: seed of the workload", unset="random"),
    Setting(
        "plot",
        TEXT,
        help="demo: draw the response-time CDF against the ideal to FILE (.png, .svg, .pdf)",
        metavar="FILE",
    ),
)

SUBMIT_SETTINGS = (
    _scheduler("the local cluster's"),
    *_tls("the local cluster's"),
    _secret_file("the local cluster's"),
    Setting("tasks", integer(1), 1, "tasks in the job", "N"),
    Setting("user", TEXT, "", "the user the job runs as (fair sharing)"),
    Setting("priority", integer(), 0, "the job's priority (lower runs first)"),
    Setting("probe_ratio", PROBE_RATIO_KIND, help="probes per task", metavar="D", unset="the scheduler's"),
    Setting(
        "sampling",
        choice(*SAMPLINGS),
        "batch",
        "how the job's probes are drawn: batch (Sparrow's) or per_task (each task for itself, the paper's baseline)",
    ),
    Setting("timeout", number(0.0, open_low=True), help="give up after this many seconds", metavar="S", unset="wait"),
    Setting(
        "resources",
        REQUEST,
        help="what each task takes besides its slot (docs/resources.md), like gpu=1,cpus=2,memory=4GiB",
        metavar="NAME=AMOUNT,...",
        unset="a slot alone",
    ),
    Setting(
        "py_modules",
        TEXTS,
        [],
        "a package directory or .py file shipped with the job, first on the workers' sys.path (repeatable; "
        "docs/code-shipping.md)",
        "PATH",
    ),
    Setting(
        "working_dir",
        TEXT,
        help="a directory shipped with the job, where its tasks run (docs/code-shipping.md)",
        metavar="DIR",
        unset="none: the workers' own",
    ),
    Setting(
        "task_timeout",
        number(0.0, open_low=True),
        help="stop a task that runs longer than this (needs process executors)",
        metavar="S",
        unset="no limit",
    ),
    Setting(
        "retries",
        integer(0),
        DEFAULT_RETRIES,
        "relaunch a task this many times after a system failure (its "
        "worker, node monitor or scheduler lost; 0 for a task with side effects)",
        "N",
    ),
    Setting(
        "scheduler_timeout",
        number(0.0, open_low=True),
        DEFAULT_SCHEDULER_TIMEOUT,
        "fail over to another --scheduler when this one is silent this long",
        "S",
    ),
    Setting("traceback", BOOLEAN, False, "print the remote traceback of a failed callable"),
    Setting(
        "output",
        choice(*OUTPUT_MODES),
        "print",
        "what the tasks print: print (each line here, after a (task JOB.TASK on NODE) prefix) or keep (not shown)",
    ),
    _log_level("warning"),
)

STATUS_SETTINGS = (
    _scheduler("the local cluster's"),
    *_tls("the local cluster's"),
    _secret_file("the local cluster's"),
    Setting("json", BOOLEAN, False, "print JSON instead of tables"),
    _log_level("warning"),
)

CERTS_SETTINGS = (
    Setting("certs_dir", TEXT, "sparrow-certs", "folder of the CA (ca.pem, ca-key.pem) and the certificates", "DIR"),
    Setting(
        "days",
        number(0.0, open_low=True),
        help="days the certificate is valid",
        metavar="N",
        unset=f"{DEFAULT_CA_DAYS} for a CA, {DEFAULT_DAYS} for others",
    ),
    Setting("force", BOOLEAN, False, "replace files that exist"),
)


COMMANDS = {
    "scheduler": SCHEDULER_SETTINGS,
    "node-monitor": NODE_MONITOR_SETTINGS,
    "local": LOCAL_SETTINGS,
    "submit": SUBMIT_SETTINGS,
    "status": STATUS_SETTINGS,
    "tasks": STATUS_SETTINGS,
    "certs": CERTS_SETTINGS,
}

# Settings that are gone, per command: their flag, variable and TOML key say what to do instead.
RETIRED: dict[str, tuple[Retired, ...]] = {"node-monitor": PIPELINE_RETIRED, "local": PIPELINE_RETIRED}
EVERY_RETIRED = tuple(old for group in RETIRED.values() for old in group)
