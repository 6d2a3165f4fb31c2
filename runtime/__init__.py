"""sparrow_runtime: Sparrow as networked trio services (scheduler, node monitor, executors), the wire
protocol between them, and the client API. See docs/runtime.md.

The public names are imported on first use (PEP 562): an executor worker process, which only needs
the framing and the task codec, then starts without importing trio and the services.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Client": "client.core",
    "JobHandle": "client.core",
    "JobOptions": "client.job",
    "TaskOutcome": "client.core",
    "ConnectionLost": "errors",
    "DependencyFailed": "errors",
    "FrameTooLarge": "errors",
    "HandshakeError": "errors",
    "ListenError": "errors",
    "ProtocolError": "errors",
    "RemoteTraceback": "errors",
    "SparrowError": "errors",
    "TaskCancelled": "errors",
    "TaskFailed": "errors",
    "TaskTimeout": "errors",
    "UploadFailed": "errors",
    "ValueLost": "errors",
    "LocalCluster": "services.local_cluster",
    "LinkConfig": "wire.link_config",
    "NodeMonitorConfig": "services.config",
    "SchedulerConfig": "services.config",
    "Constraint": "wire.messages",
    "serve_node_monitor": "services.node_monitor",
    "serve_scheduler": "services.scheduler",
    "SparrowExecutor": "client.executor",
    "TLS": "wire.tls",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .client.core import Client as Client
    from .client.core import JobHandle as JobHandle
    from .client.core import TaskOutcome as TaskOutcome
    from .client.executor import SparrowExecutor as SparrowExecutor
    from .client.job import JobOptions as JobOptions
    from .errors import ConnectionLost as ConnectionLost
    from .errors import DependencyFailed as DependencyFailed
    from .errors import FrameTooLarge as FrameTooLarge
    from .errors import HandshakeError as HandshakeError
    from .errors import ListenError as ListenError
    from .errors import ProtocolError as ProtocolError
    from .errors import RemoteTraceback as RemoteTraceback
    from .errors import SparrowError as SparrowError
    from .errors import TaskCancelled as TaskCancelled
    from .errors import TaskFailed as TaskFailed
    from .errors import TaskTimeout as TaskTimeout
    from .errors import UploadFailed as UploadFailed
    from .errors import ValueLost as ValueLost
    from .services.config import NodeMonitorConfig as NodeMonitorConfig
    from .services.config import SchedulerConfig as SchedulerConfig
    from .services.local_cluster import LocalCluster as LocalCluster
    from .services.node_monitor import serve_node_monitor as serve_node_monitor
    from .services.scheduler import serve_scheduler as serve_scheduler
    from .wire.link_config import LinkConfig as LinkConfig
    from .wire.messages import Constraint as Constraint
    from .wire.tls import TLS as TLS


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sparrow_runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
