"""The exception hierarchy of sparrow_runtime: one module, so callers can catch narrowly."""

from __future__ import annotations


class SparrowError(Exception):
    """Base class of every error raised by sparrow_runtime."""


class ProtocolError(SparrowError):
    """A peer broke the wire protocol: oversized frame, undecodable bytes, or a message out of order.

    The connection it happened on is closed; other connections are unaffected.
    """


class FrameTooLarge(ProtocolError):
    """A frame's declared length exceeds the connection's size limit."""


class HandshakeError(ProtocolError):
    """The connection handshake failed: wrong secret, other protocol version, wrong role, or too slow."""


class SilentPeer(HandshakeError):
    """A peer sent nothing within the handshake's first-byte deadline (an idle connection)."""


class ServiceStop(SparrowError):
    """Raised on purpose to stop a whole service (not just one connection): guard.py lets it through."""


class RegistrationRefused(ServiceStop):
    """A scheduler refused this node monitor for a reason retrying cannot fix (its id is taken by
    another node monitor): the node monitor stops with the scheduler's reason."""


class ConnectionLost(SparrowError):
    """The peer closed the connection (or it broke) before the exchange was complete."""


class ListenError(SparrowError, OSError):
    """A service could not listen where it was asked to (port in use, not an address of this host)."""


class TaskFailed(SparrowError):
    """A task produced no result of its own: its executor process died, its node monitor was lost,
    no node monitor could run it, or the connection to its scheduler was lost.

    The message says which. (An exception raised *by* the task is re-raised as itself instead.)
    """


class TaskTimeout(TaskFailed):
    """A task ran past its job's timeout and was stopped (its worker process killed). The message
    names the limit."""


class ValueLost(TaskFailed):
    """A task's result was kept at its node monitor and cannot be fetched from there any more: the node
    monitor is gone or unreachable, or no longer holds it (released, or a transfer broke off). The
    message names the value's node monitor and why."""


class UploadFailed(SparrowError):
    """A value given to `Client.scatter` could not be uploaded to a node monitor: it refused it (over its
    max_value or its memory limit), or the link broke or stalled. The message names the node monitor and
    why; nothing was kept there."""


class CodeError(SparrowError, ValueError):
    """A job's code (`py_modules`, `working_dir`) breaks a limit or cannot be packed: too big, too many files, a
    path out of its folder, a link out, a device. Raised by the client before anything is sent; a node monitor
    that finds the same in an archive refuses it, and the job's tasks fail with the reason."""


class TaskCancelled(SparrowError):
    """The task was cancelled by its client before it produced an outcome."""


class DependencyFailed(SparrowError):
    """A task did not run because one of its inputs (a task whose result it takes) failed.

    `path` names the input in the task's arguments (`"args[0]"`, `"kwargs['x'][2]"`), `reason` the first
    failure upstream ("ValueError: ..."); ``__cause__`` is the input's own exception, where it is known.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"input {self.path} failed: {self.reason}"


class RemoteTraceback(Exception):
    """Attached as ``__cause__`` to an exception raised by a remote task: its text is the remote traceback."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return f'\n"""\n{self.tb}"""'
