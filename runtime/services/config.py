"""The settings of each service as one frozen object, passed whole: `serve_scheduler(SchedulerConfig(...))`,
`serve_node_monitor(NodeMonitorConfig(...))`.

Each config holds the one set of defaults of its service: `sparrow scheduler` (its Setting table,
cli/options.py), LocalCluster and `serve_scheduler` start from the same values, and so does the
logic class (SchedulerLogic's own defaults are these). Its link (credentials, handshake deadline,
frame limit) is a LinkConfig of its own.

Error handling: a bad value raises ValueError at construction, naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparrow_core import QUEUE_POLICIES, check_probe_ratio

from ..data.code_cache import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ENTRIES, check_cache_bounds
from ..wire.address import Address, format_address, parse_address
from ..wire.limits import DEFAULT_INLINE_LIMIT, DEFAULT_MAX_VALUE
from ..wire.link_config import LinkConfig
from ..wire.liveness import DEFAULT_SCHEDULER_TIMEOUT, HEARTBEATS_PER_TIMEOUT
from .arguments import check_counts, check_flags
from .outcome_batching import DEFAULT_RESULT_DELAY, check_result_delay
from .output_limit import DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_RATE, check_output_settings
from .pipeline import DEFAULT_PIPELINE_DEPTH, DEFAULT_PIPELINE_MODE, check_pipeline_depth, check_pipeline_mode
from .scheduler_logic import (
    DEFAULT_BIND_IDLE,
    DEFAULT_CLIENT_GRACE,
    DEFAULT_MAX_CLIENT_TASKS,
    DEFAULT_PLACEMENT_TIMEOUT,
    DEFAULT_PROBE_RATIO,
)
from .user_metrics import DEFAULT_METRICS_USERS, check_metrics_users
from .weights import check_weights

# field -> the setting it is read from (`sparrow scheduler`'s flag, SPARROW_* variable and TOML key; the
# address is its `listen`, the link its credentials and `max_frame`)
SCHEDULER_SETTINGS = {
    "scheduler_id": "id",
    "node_monitors": "node_monitor",
    "probe_ratio": "probe_ratio",
    "bind_idle": "bind_idle",
    "seed": "seed",
    "placement_timeout": "placement_timeout",
    "max_client_tasks": "max_client_tasks",
    "client_grace": "client_grace",
    "node_timeout": "node_timeout",
    "client_timeout": "client_timeout",
    "result_delay": "result_delay",
    "metrics_users": "metrics_users",
}

# field -> the setting it is read from (`sparrow node-monitor`'s; the address is its `listen`, the data
# listener's its `data_listen`, the link its credentials and `max_frame`)
NODE_MONITOR_SETTINGS = {
    "schedulers": "scheduler",
    "node_id": "id",
    "slots": "slots",
    "resources": "resources",
    "labels": "label",
    "policy": "policy",
    "weights": "weight",
    "executor": "executor",
    "pipeline": "pipeline",
    "pipeline_depth": "pipeline_depth",
    "give_back": "give_back",
    "steal": "steal",
    "task_user": "task_user",
    "heartbeat_interval": "heartbeat_interval",
    "scheduler_timeout": "scheduler_timeout",
    "inline_limit": "inline_limit",
    "memory_limit": "memory_limit",
    "max_value": "max_value",
    "code_cache_bytes": "code_cache_bytes",
    "code_cache_entries": "code_cache_entries",
    "output_cap": "output_cap",
    "output_rate": "output_rate",
}
EXECUTORS = ("process", "thread")  # worker processes (cloudpickle) or threads of the node monitor

DEFAULT_GIVE_BACK = False  # give-back (docs/pipelining.md, "Give-back")
DEFAULT_STEAL_TIMEOUT = 0.5  # seconds a steal request may wait for its answer
DEFAULT_HEARTBEAT_INTERVAL = DEFAULT_SCHEDULER_TIMEOUT / HEARTBEATS_PER_TIMEOUT  # 0.5 s: a node monitor's
DEFAULT_NODE_TIMEOUT = 2.0  # a node monitor silent this long is dropped (they heartbeat every 0.5 s)
DEFAULT_CLIENT_TIMEOUT = 10.0  # a client silent this long is dropped (clients heartbeat, client/core.py)


def check_seconds(name: str, value: float, *, zero: bool = True) -> None:
    """`value` is a finite number of seconds, >= 0 (or > 0 unless `zero`)."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value < math.inf
    if not ok or value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be a number of seconds {'>=' if zero else '>'} 0, got {value!r}")


@dataclass(frozen=True)
class SchedulerConfig:
    """A scheduler's settings (docs/configuration.md names each as a flag, variable and TOML key).

    It listens on `host:port` (port 0: any free port; "unix:PATH" as `host`: a Unix socket), under
    the id `scheduler_id` (default "scheduler@HOST:PORT"), and dials the node monitors in
    `node_monitors` ("host:port", "unix:PATH" or (host, port): others dial it). A job is probed on
    `probe_ratio` node monitors per task; `bind_idle` sends its first tasks with its reservations to
    node monitors believed idle. `seed` seeds the probe sampling (None: random). A job waits at most
    `placement_timeout` seconds for a node monitor that can take it; a client may have
    `max_client_tasks` unfinished tasks; a lost client's running tasks are stopped once it is not
    back within `client_grace` seconds. A node monitor silent for `node_timeout` seconds, or a client
    silent for `client_timeout`, is dropped. A task's outcome may wait up to `result_delay` seconds
    to share a write to its client. Its metrics, where it serves them, give the first `metrics_users` users
    series of their own (user_metrics.py)."""

    link: LinkConfig = field(default_factory=LinkConfig)
    host: str = "127.0.0.1"
    port: int = 0
    scheduler_id: str | None = None
    node_monitors: tuple[Address, ...] = ()
    probe_ratio: float = DEFAULT_PROBE_RATIO
    bind_idle: bool = DEFAULT_BIND_IDLE
    seed: int | None = None
    placement_timeout: float = DEFAULT_PLACEMENT_TIMEOUT
    max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS
    client_grace: float = DEFAULT_CLIENT_GRACE
    node_timeout: float = DEFAULT_NODE_TIMEOUT
    client_timeout: float = DEFAULT_CLIENT_TIMEOUT
    result_delay: float = DEFAULT_RESULT_DELAY
    metrics_users: int = DEFAULT_METRICS_USERS

    def __post_init__(self) -> None:
        if not isinstance(self.link, LinkConfig):
            raise ValueError(f"link must be a LinkConfig, got {type(self.link).__name__}")
        if isinstance(self.node_monitors, str):
            raise ValueError("node_monitors must be a sequence of addresses, got one string")
        object.__setattr__(self, "node_monitors", tuple(parse_address(a) for a in self.node_monitors))
        check_probe_ratio(self.probe_ratio)
        check_flags(bind_idle=self.bind_idle)
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0):
            raise ValueError(f"seed must be an int >= 0 or None, got {self.seed!r}")
        check_counts(max_client_tasks=self.max_client_tasks)
        check_seconds("placement_timeout", self.placement_timeout)
        check_seconds("client_grace", self.client_grace)
        check_seconds("node_timeout", self.node_timeout, zero=False)
        check_seconds("client_timeout", self.client_timeout, zero=False)
        check_result_delay(self.result_delay)
        check_metrics_users(self.metrics_users)

    def logic_options(self, scheduler_id: str) -> dict[str, Any]:
        """The keyword arguments of the SchedulerLogic this config runs, under `scheduler_id`."""
        return {
            "scheduler_id": scheduler_id,
            "probe_ratio": self.probe_ratio,
            "bind_idle": self.bind_idle,
            "seed": self.seed,
            "placement_timeout": self.placement_timeout,
            "max_client_tasks": self.max_client_tasks,
            "client_grace": self.client_grace,
            "max_frame": self.link.max_frame,
        }


@dataclass(frozen=True)
class NodeMonitorConfig:
    """A node monitor's settings (docs/configuration.md names each as a flag, variable and TOML key).

    It registers with every scheduler in `schedulers` (addresses) and listens on `host:port` for those that
    dial it, under the id `node_id` (default "HOST:PORT": this host's name and the port it listens on). It
    runs `slots` tasks at once (None: the CPU count) on `executor` ("process" or "thread"; with `task_user`,
    process executors run tasks as that OS user), offers `resources` ({name: units}, wire/resources.py;
    None: detected, capacity.py) and `labels`, and queues reservations by `policy` (fifo, priority, fair:
    `weights` per user). `pipeline` (a mode of services/pipeline/) asks for tasks ahead up to
    `pipeline_depth` deep; `give_back` returns a task bound ahead behind tasks that overran; `steal` takes
    reservations from its peers (each request waiting at most `steal_timeout` seconds). It heartbeats every
    `heartbeat_interval` seconds and drops a scheduler silent for `scheduler_timeout`. A result over
    `inline_limit` bytes stays here (at most `memory_limit` bytes of them; None: a quarter of the host's
    memory), served by the data listener on `data_host:data_port` (None: beside `host`); `max_value` is the
    largest value kept or sent. Process executors capture what each task writes to stdout and stderr, up to
    `output_cap` bytes of each (0: not captured: it goes to this node monitor's stderr), and what they send up
    is held to `output_rate` bytes a second (output_limit.py). The code jobs ship is unpacked here for process
    executors, at most `code_cache_entries` archives and `code_cache_bytes` of files (data/code_cache.py)."""

    link: LinkConfig = field(default_factory=LinkConfig)
    schedulers: tuple[Address, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    node_id: str | None = None
    slots: int | None = None
    resources: Mapping[str, int] | None = None
    labels: tuple[str, ...] = ()
    policy: str = "fifo"
    weights: Mapping[str, float] = field(default_factory=dict)
    executor: str = "process"
    pipeline: str = DEFAULT_PIPELINE_MODE
    pipeline_depth: int = DEFAULT_PIPELINE_DEPTH
    give_back: bool = DEFAULT_GIVE_BACK
    steal: bool = False
    steal_timeout: float = DEFAULT_STEAL_TIMEOUT
    task_user: str | None = None
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL
    scheduler_timeout: float = DEFAULT_SCHEDULER_TIMEOUT
    data_host: str | None = None
    data_port: int = 0
    inline_limit: int = DEFAULT_INLINE_LIMIT
    memory_limit: int | None = None
    max_value: int = DEFAULT_MAX_VALUE
    code_cache_bytes: int = DEFAULT_CACHE_BYTES
    code_cache_entries: int = DEFAULT_CACHE_ENTRIES
    output_cap: int = DEFAULT_OUTPUT_CAP
    output_rate: int = DEFAULT_OUTPUT_RATE

    def __post_init__(self) -> None:
        if not isinstance(self.link, LinkConfig):
            raise ValueError(f"link must be a LinkConfig, got {type(self.link).__name__}")
        for name in ("schedulers", "labels"):
            if isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a sequence, got one string")
        object.__setattr__(self, "schedulers", tuple(parse_address(a) for a in self.schedulers))
        object.__setattr__(self, "labels", tuple(self.labels))
        if self.slots is not None:
            check_counts(slots=self.slots)
        if self.policy not in QUEUE_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(QUEUE_POLICIES)}, got {self.policy!r}")
        try:
            object.__setattr__(self, "weights", check_weights(dict(self.weights)))
        except ValueError as exc:
            raise ValueError(f"weights: {exc}") from None
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        check_pipeline_mode(self.pipeline)
        check_pipeline_depth(self.pipeline_depth)
        check_flags(give_back=self.give_back, steal=self.steal)
        check_seconds("steal_timeout", self.steal_timeout, zero=False)
        check_seconds("scheduler_timeout", self.scheduler_timeout, zero=False)
        check_seconds("heartbeat_interval", self.heartbeat_interval, zero=False)
        if self.heartbeat_interval >= self.scheduler_timeout:
            raise ValueError(
                f"heartbeat_interval ({self.heartbeat_interval}) must be shorter than "
                f"scheduler_timeout ({self.scheduler_timeout})"
            )
        for name in ("inline_limit", "max_value", "memory_limit"):
            value = getattr(self, name)
            if value is None and name == "memory_limit":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int of bytes >= 0, got {value!r}")
        check_cache_bounds(self.code_cache_bytes, self.code_cache_entries)
        check_output_settings(self.output_cap, self.output_rate)


def setting_flags(config: Any, settings: dict[str, str]) -> list[str]:
    """The command-line flags that give a service the fields of `config` named in `settings` (field ->
    setting) that differ from their defaults: `--probe-ratio 1.5`, `--no-bind-idle`, a repeated flag per
    item of a list and per entry of a table. Fields left at their defaults give none, so the service's own
    sources (SPARROW_* variables, its config file) still apply to them."""
    defaults = type(config)()
    flags: list[str] = []
    for name, setting in settings.items():
        value = getattr(config, name)
        if value == getattr(defaults, name):
            continue
        flag = "--" + setting.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, dict):
            flags += [part for key, item in value.items() for part in (flag, f"{key}={item}")]
        elif isinstance(value, (list, tuple)):
            flags += [part for item in value for part in (flag, _text(item))]
        elif value is not None:
            flags += [flag, str(value)]
    return flags


def _text(item: Any) -> str:
    return format_address(item) if isinstance(item, tuple) else str(item)
