"""A service's config object (services/config.py) built once from its command's resolved settings:
`sparrow scheduler` runs `serve_scheduler(scheduler_config(s, credentials))`, `sparrow node-monitor`
`serve_node_monitor(node_monitor_config(s, credentials))`.

services/config.py's SCHEDULER_SETTINGS and NODE_MONITOR_SETTINGS name the setting each config field is read from;
tests/cli/test_service_config.py checks that every field's default is its setting's, so the command and the
library start alike.
"""

from __future__ import annotations

from typing import Any

from ..services.config import NODE_MONITOR_SETTINGS, SCHEDULER_SETTINGS, NodeMonitorConfig, SchedulerConfig
from ..wire.link_config import LinkConfig
from .config import Resolved

LINK_FIELDS = {"max_frame": "max_frame"}


def link_config(s: Resolved, credentials: dict[str, Any]) -> LinkConfig:
    """The link of a service: its credentials ({"tls": ...} or {"secret": ...}, common.prepare_service)
    and its frame limit."""
    return LinkConfig(**credentials, **{name: s[setting] for name, setting in LINK_FIELDS.items()})


def scheduler_config(s: Resolved, credentials: dict[str, Any]) -> SchedulerConfig:
    host, port = s["listen"]
    fields = {name: s[setting] for name, setting in SCHEDULER_SETTINGS.items()}
    return SchedulerConfig(link=link_config(s, credentials), host=host, port=port, **fields)


def node_monitor_config(s: Resolved, credentials: dict[str, Any]) -> NodeMonitorConfig:
    host, port = s["listen"]
    data_host, data_port = s["data_listen"] or (None, 0)
    fields = {name: s[setting] for name, setting in NODE_MONITOR_SETTINGS.items()}
    return NodeMonitorConfig(
        link=link_config(s, credentials), host=host, port=port, data_host=data_host, data_port=data_port, **fields
    )
