"""Every message of the wire protocol, as tagged msgspec Structs, and the one union the decoders accept.

Connections and the messages allowed on them (see docs/runtime.md):
- handshake (every connection): server -> Challenge, client -> Authenticate, server -> Welcome | Error.
- client <-> scheduler: SubmitJob -> JobAccepted | JobRejected, then TaskResult per task;
  StatusRequest -> StatusReply (what the scheduler knows, for `sparrow status`).
- node monitor <-> scheduler: RegisterNodeMonitor -> Registered; Heartbeat both ways; scheduler ->
  EnqueueReservations, CancelReservations, TaskLaunch | NoTask; node monitor -> GetTask, TaskFinished.
- node monitor <-> executor process (private socket pair, no handshake): LaunchTask -> ExecutorResult.
- Error: either side, any time; the sender closes the connection after it.

Structs are encoded as msgpack arrays (array_like) with a small integer tag first: compact and fast.
"""

from __future__ import annotations

from typing import Union

import msgspec

PROTOCOL_VERSION = 2  # 2: TaskResult.last, Heartbeat.draining


class _Msg(msgspec.Struct, array_like=True, tag_field="t", gc=False):
    pass


class Constraint(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Where a job or a task may run: on one of `node_monitors` (ids; empty = any) that has every label
    in `labels` (empty = no requirement)."""

    node_monitors: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


# -- handshake -------------------------------------------------------------------------------------


class Challenge(_Msg, tag=1):
    version: int
    role: str
    peer_id: str
    nonce: bytes


class Authenticate(_Msg, tag=2):
    version: int
    role: str
    peer_id: str
    mac: bytes
    nonce: bytes


class Welcome(_Msg, tag=3):
    mac: bytes


class Error(_Msg, tag=4):
    reason: str


# -- client <-> scheduler --------------------------------------------------------------------------


class SubmitJob(_Msg, tag=10):
    ref: int
    tasks: list[bytes]
    user: str = ""
    priority: int = 0
    probe_ratio: Union[float, None] = None
    constraint: Union[Constraint, None] = None
    task_constraints: Union[list[Union[Constraint, None]], None] = None


class JobAccepted(_Msg, tag=11):
    ref: int
    job_id: int


class JobRejected(_Msg, tag=12):
    ref: int
    reason: str


class TaskResult(_Msg, tag=13):
    ref: int
    task: int
    ok: bool
    payload: bytes
    error: str = ""
    last: bool = False  # the last outcome of its job (outcome_batching.py)


class StatusRequest(_Msg, tag=14):
    pass


class NodeStatus(msgspec.Struct, array_like=True, gc=False):
    """A registered node monitor as its scheduler sees it; `queued` and `busy` (slots running or
    asking for a task) as of its last heartbeat, `silent_for` seconds ago."""

    node_id: str
    slots: int
    labels: tuple[str, ...]
    queued: int
    busy: int
    silent_for: float
    draining: bool = False


class JobStatus(msgspec.Struct, array_like=True, gc=False):
    """A job in flight: its tasks, how many were launched, are running, and have an outcome."""

    job_id: int
    user: str
    priority: int
    tasks: int
    launched: int
    running: int
    done: int


class StatusReply(_Msg, tag=15):
    scheduler_id: str
    nodes: list[NodeStatus]
    jobs: list[JobStatus]
    counters: dict[str, int]


# -- node monitor <-> scheduler --------------------------------------------------------------------


class RegisterNodeMonitor(_Msg, tag=20):
    node_id: str
    slots: int
    labels: tuple[str, ...] = ()


class Registered(_Msg, tag=21):
    scheduler_id: str


class Heartbeat(_Msg, tag=22):
    """From a node monitor: its reservations waiting and busy slots, and whether it is draining (it
    takes no more reservations: the scheduler stops probing it and re-probes what it held). A
    scheduler's echo: zeros."""

    queued: int = 0
    busy: int = 0
    draining: bool = False


class EnqueueReservations(_Msg, tag=23):
    job_id: int
    user: str
    priority: int
    count: int


class CancelReservations(_Msg, tag=24):
    job_id: int


class GetTask(_Msg, tag=25):
    job_id: int


class TaskLaunch(_Msg, tag=26):
    job_id: int
    task: int
    payload: bytes


class NoTask(_Msg, tag=27):
    job_id: int


class TaskFinished(_Msg, tag=28):
    job_id: int
    task: int
    ok: bool
    payload: bytes
    error: str = ""


# -- node monitor <-> executor process -------------------------------------------------------------


class LaunchTask(_Msg, tag=30):
    payload: bytes


class ExecutorResult(_Msg, tag=31):
    ok: bool
    payload: bytes
    error: str = ""


Message = Union[
    Challenge,
    Authenticate,
    Welcome,
    Error,
    SubmitJob,
    JobAccepted,
    JobRejected,
    TaskResult,
    StatusRequest,
    StatusReply,
    RegisterNodeMonitor,
    Registered,
    Heartbeat,
    EnqueueReservations,
    CancelReservations,
    GetTask,
    TaskLaunch,
    NoTask,
    TaskFinished,
    LaunchTask,
    ExecutorResult,
]
