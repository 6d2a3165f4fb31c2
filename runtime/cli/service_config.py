"""A service's config object (services/config.py) built once from its command's resolved settings:
`sparrow scheduler` runs `serve_scheduler(scheduler_config(s, credentials))`.

SCHEDULER_FIELDS names the setting each config field is read from; tests/cli/test_service_config.py
checks that every field's default is its setting's, so the command and the library start alike.
"""

from __future__ import annotations

from typing import Any

from ..services.config import SchedulerConfig
from ..wire.link_config import LinkConfig
from .config import Resolved

# config field -> the setting it is read from (its flag, variable and TOML key)
SCHEDULER_FIELDS = {
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
}
LINK_FIELDS = {"max_frame": "max_frame"}


def link_config(s: Resolved, credentials: dict[str, Any]) -> LinkConfig:
    """The link of a service: its credentials ({"tls": ...} or {"secret": ...}, common.prepare_service)
    and its frame limit."""
    return LinkConfig(**credentials, **{name: s[setting] for name, setting in LINK_FIELDS.items()})


def scheduler_config(s: Resolved, credentials: dict[str, Any]) -> SchedulerConfig:
    host, port = s["listen"]
    fields = {name: s[setting] for name, setting in SCHEDULER_FIELDS.items()}
    return SchedulerConfig(link=link_config(s, credentials), host=host, port=port, **fields)
