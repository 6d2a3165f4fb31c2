"""sparrow_runtime: Sparrow as networked trio services (scheduler, node monitor, executors), the wire
protocol between them, and the client API. See docs/runtime.md."""

from .client import Client as Client
from .client import JobHandle as JobHandle
from .client import TaskOutcome as TaskOutcome
from .errors import ConnectionLost as ConnectionLost
from .errors import FrameTooLarge as FrameTooLarge
from .errors import HandshakeError as HandshakeError
from .errors import ProtocolError as ProtocolError
from .errors import RemoteTraceback as RemoteTraceback
from .errors import SparrowError as SparrowError
from .errors import TaskFailed as TaskFailed
from .local_cluster import LocalCluster as LocalCluster
from .messages import Constraint as Constraint
from .node_monitor import serve_node_monitor as serve_node_monitor
from .scheduler import serve_scheduler as serve_scheduler
from .sync_executor import SparrowExecutor as SparrowExecutor

__all__ = [
    "Client",
    "ConnectionLost",
    "Constraint",
    "FrameTooLarge",
    "HandshakeError",
    "JobHandle",
    "LocalCluster",
    "ProtocolError",
    "RemoteTraceback",
    "SparrowError",
    "TaskFailed",
    "TaskOutcome",
    "SparrowExecutor",
    "serve_node_monitor",
    "serve_scheduler",
]
