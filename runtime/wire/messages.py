"""Every message of the wire protocol, as tagged msgspec Structs, and the one union the decoders accept.

Connections and the messages allowed on them (see docs/runtime.md):
- handshake (every connection): server -> Challenge, client -> Authenticate, server -> Welcome | Error.
- client <-> scheduler: SubmitJob -> JobAccepted | JobRejected, then OutcomeToClient per task (OutputToClient
  before it, if it printed); CancelJob; Heartbeat (echoed: liveness both ways); StatusRequest -> StatusReply
  (for `sparrow status`); TasksRequest -> TasksReply (the scheduler's record of recent tasks, for `sparrow tasks`).
- node monitor <-> scheduler: RegisterNodeMonitor -> Registered | RegistrationRefused; Heartbeat both ways; scheduler ->
  EnqueueReservations, CancelReservations, TaskToNode | NoTask, StopTask; node monitor -> GetTask,
  OutcomeToScheduler (OutputToScheduler before it, if the task printed), GiveBack (a task it was given and has
  not started, handed back: no outcome follows).
- node monitor <-> worker process (private socket pair, no handshake): WorkerReady first (the worker imported and
  serves); TaskToWorker -> OutcomeToNode, one per task in order (OutputToNode before it, if the task printed);
  DropTask (a task handed ahead, not started: skip it).
- scheduler -> node monitor: ReleaseSession (a client is gone: drop the values its tasks left); StealPeers (the
  other stealing node monitors, to a node monitor that steals).
- node monitor (thief) -> node monitor (victim), work stealing (services/steal.py): StealProbe -> StealState;
  StealTake -> Stolen; StealRelease (no answer).
- client or node monitor -> a node monitor's data address: FetchValue -> ValueHeader + ValueChunk... |
  ValueMissing; on a Unix socket FetchFile -> ValueFile + its memory file's descriptor (or as FetchValue);
  ReleaseValues (runtime/data/); a client: PutValue -> ValueHeader (go ahead, in chunks of this
  size) + the client's ValueChunk... -> ValueKept, or Error (refused: the link closes) (data/upload.py).
- Error: either side, any time; the sender closes the connection after it.

A task travels down as `TaskTo<receiver>` and its outcome back up as `OutcomeTo<receiver>`: the name
says the hop. Every outcome is one `Outcome` struct, nested in the message that carries it (as
`Constraint` nests in SubmitJob) and passed on unchanged from the worker to the client.

Structs are encoded as msgpack arrays (array_like) with a small integer tag first: compact and fast.
Every field a peer sends has a limit (limits.py), declared here and checked by the decoder: a
message over one is a protocol error that names the message, the field and the limit. SubmitJob
is the exception: its limits are checked by `limits.job_problem`, so a job over one is answered
with JobRejected and the connection stays.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from .limits import (
    MAX_ADDRESS,
    MAX_BLOCKED_FOR,
    MAX_CHUNKS,
    MAX_COUNT,
    MAX_ERROR_SUMMARY,
    MAX_ID,
    MAX_INPUTS,
    MAX_KEY,
    MAX_LABELS,
    MAX_NAME,
    MAX_OUTPUT,
    MAX_OUTPUT_TAIL,
    MAX_PROBES_PER_JOB,
    MAX_RELEASE_KEYS,
    MAX_SLOTS,
    MAX_STEAL_PEERS,
    MAX_STEAL_SCHEDULERS,
    MAX_STEAL_TAKE,
    MAX_TASK_RECORDS,
    MAX_TASKS_PER_JOB,
    MAX_VALUE_SIZE,
    PRIORITY_MAX,
    PRIORITY_MIN,
)
from .resources import ResourceUnits

# 2: last, draining; 3: limits, instance, failures, ...; 4: Outcome, hop names; 5: the data plane; 6: work stealing;
# 7: uploads (PutValue, ValueKept), node monitors' data addresses at registration; 8: tasks bound with their
# reservations (TaskToNode.bound, user, session), memory files passed on Unix data links (FetchFile, ValueFile);
# 9: give-back (GiveBack: a node monitor hands a task bound ahead, not started, back to its scheduler); 10: resources
# per task (SubmitJob.resources, EnqueueReservations.resources, RegisterNodeMonitor.resources); 11: a session's
# user in ReleaseSession (a node monitor that ignored it would drop another user's values), and in FetchValue and
# FetchFile (the user of the task a node monitor fetches for); 12: CancelJob.pending_only; 13: the task history
# (TasksRequest, TasksReply); 14: TaskStarted (SubmitJob.report_started); 15: stealing tasks with resources
# (StealTake.free, StolenReservation.resources); 16: shipped code (a task payload's RemoteCall.code, which a node
# monitor that ignored it would run without); 17: what a task printed (OutputToNode, OutputToScheduler,
# OutputToClient, each just before the task's outcome, only for a task that printed)
PROTOCOL_VERSION = 17

# Why a task ended without an outcome of its own (`Outcome.failure`; 0: it returned or raised). A
# system failure may be retried by the client; the others may not.
SYSTEM = 1  # its worker process died, its node monitor or scheduler was lost
CANCELLED = 2  # cancelled by its client (or killed for it, with force)
TIMED_OUT = 3  # ran past its job's timeout and was stopped
UNPLACEABLE = 4  # no node monitor could take it in time, or the scheduler rejected its job
TOO_LARGE = 5  # over the frame limit of a hop on its way, its node monitor's memory, or its memory request
LOST_INPUT = 6  # an input's value was lost (its holder died or no longer has it): `payload` lists the lost keys
FAILURES = (SYSTEM, CANCELLED, TIMED_OUT, UNPLACEABLE, TOO_LARGE, LOST_INPUT)

Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
Id = Annotated[int, msgspec.Meta(ge=0, le=MAX_ID)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
Priority = Annotated[int, msgspec.Meta(ge=PRIORITY_MIN, le=PRIORITY_MAX)]
Digest = Annotated[bytes, msgspec.Meta(max_length=64)]
FrameLimit = Annotated[int, msgspec.Meta(ge=0, lt=2**32)]  # a peer's max_frame; 0: not told
Key = Annotated[bytes, msgspec.Meta(min_length=1, max_length=MAX_KEY)]  # a value's key at its node monitor
Size = Annotated[int, msgspec.Meta(ge=0, le=MAX_VALUE_SIZE)]
AddressText = Annotated[str, msgspec.Meta(max_length=MAX_ADDRESS)]  # "HOST:PORT" or "unix:PATH"
StealCount = Annotated[int, msgspec.Meta(ge=1, le=MAX_STEAL_TAKE)]


class _Msg(msgspec.Struct, array_like=True, tag_field="t", gc=False):
    pass


class Constraint(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Where a job or a task may run: on one of `node_monitors` (ids; empty = any) that has every label
    in `labels` (empty = no requirement)."""

    node_monitors: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


class ValueRef(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A value kept at the node monitor `node_id`, fetched from its data address `address` by `key` (random,
    unguessable), `size` bytes of pickled value (runtime/data/)."""

    node_id: Name
    address: AddressText
    key: Key
    size: Size


OutputText = Annotated[bytes, msgspec.Meta(max_length=MAX_OUTPUT)]


class Output(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """What a task wrote to its stdout and its stderr (file descriptors 1 and 2, its subprocesses' too), captured
    by its worker (services/task_output.py) and cut at its node monitor's caps with a marker line where bytes
    were left out; `node`: the node monitor it ran on."""

    stdout: OutputText = b""
    stderr: OutputText = b""
    node: Name = ""


class Outcome(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """How a task ended: `ok` with its pickled value in `payload` (or, for a value over its node monitor's
    inline limit, an empty payload and the value's reference in `ref`), or not ok with its pickled
    exception in `payload` (empty if it cannot be pickled) and the formatted traceback in `error`;
    `failure` is 0 when the task returned or raised, else why it has no outcome of its own (SYSTEM,
    CANCELLED, ...) and `error` says so. Made once where the task ended and passed on unchanged to its
    client. What the task printed is no part of it: it travels just before it, in an `OutputTo<receiver>`
    of its own, only when there is some (a task that printed nothing costs no byte)."""

    ok: bool
    payload: bytes = b""
    error: str = ""
    failure: Annotated[int, msgspec.Meta(ge=0, le=max(FAILURES))] = 0
    ref: ValueRef | None = None


def failed(reason: str, failure: int = SYSTEM) -> Outcome:
    """The outcome of a task that ended without one of its own, for `reason` (a cause of FAILURES)."""
    return Outcome(False, b"", reason, failure)


# -- handshake -------------------------------------------------------------------------------------


class Challenge(_Msg, tag=1):
    """`max_frame`: the largest frame the server accepts; senders keep to the smaller of both sides'."""

    version: Count
    role: Name
    peer_id: Name
    nonce: Digest
    max_frame: FrameLimit = 0


class Authenticate(_Msg, tag=2):
    """`max_frame`: the largest frame the client accepts (see Challenge)."""

    version: Count
    role: Name
    peer_id: Name
    mac: Digest
    nonce: Digest
    max_frame: FrameLimit = 0


class Welcome(_Msg, tag=3):
    mac: Digest


class Error(_Msg, tag=4):
    reason: str


# -- client <-> scheduler --------------------------------------------------------------------------


class SubmitJob(_Msg, tag=10):
    """`timeout`: seconds each task may run before it is stopped (None: no limit). `task_prefer`: per
    task, the ids of node monitors to probe first (empty: none), a soft placement preference: the task
    may still run elsewhere (None: no task has one). `sampling`: "batch" (Sparrow's batch sampling) or
    "per_task" (each task probes for itself: the paper's per-task sampling baseline)."""

    ref: Id
    tasks: list[bytes]
    user: str = ""
    priority: int = 0
    probe_ratio: float | None = None
    constraint: Constraint | None = None
    task_constraints: list[Constraint | None] | None = None
    timeout: float | None = None
    task_prefer: list[tuple[str, ...]] | None = None
    sampling: str = "batch"
    resources: dict[str, int] | None = None  # what each task takes besides its slot, in units (wire/resources.py)
    report_started: bool = False  # tell the client when each task is handed out (TaskStarted)


class CancelJob(_Msg, tag=16):
    """Cancel the tasks `tasks` (None: all) of the job `ref`: not launched yet, they never are;
    running, they finish and their result is discarded, or are killed with `force`. Each ends
    with a CANCELLED outcome at once. `pending_only`: only the tasks not handed out yet; the others go
    on to their outcomes (shutdown(cancel_futures=True): the scheduler decides which have started)."""

    ref: Id
    force: bool = False
    tasks: Annotated[list[Id], msgspec.Meta(max_length=MAX_TASKS_PER_JOB)] | None = None
    pending_only: bool = False


class JobAccepted(_Msg, tag=11):
    ref: Id
    job_id: Id


class JobRejected(_Msg, tag=12):
    ref: Id
    reason: str


class OutcomeToClient(_Msg, tag=13):
    """Scheduler -> client: task `task` of the client's job `ref` ended."""

    ref: Id
    task: Id
    outcome: Outcome
    last: bool = False  # the last outcome of its job (outcome_batching.py)


class TaskStarted(_Msg, tag=55):
    """Scheduler -> client, for a job that asked (SubmitJob.report_started): task `task` of the client's job
    `ref` was handed out to run (a cancel without force no longer stops it). Sent only for a task still without
    an outcome a full result-batching period after it was handed out, with the outcomes of that flush
    (services/outcome_batching.py): a shorter task's outcome tells it all."""

    ref: Id
    task: Id


class OutputToClient(_Msg, tag=56):
    """Scheduler -> client: what task `task` of the client's job `ref` printed, just before its OutcomeToClient
    (one per attempt that printed; none for a task that printed nothing)."""

    ref: Id
    task: Id
    output: Output


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
    data_address: str = ""  # where its values are fetched and uploads go; "": not told (an older node monitor)


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


class TaskRecord(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """How one task ended, as its scheduler recorded it (services/task_history.py): its job, task and user,
    `state` ("ok", "raised" or the failure's name), the node monitor it ran on ("" if it never ran), how often
    it was launched, seconds from its job's submission to its last launch (`queue_wait`) and from there to its
    outcome (`run_time`), `error` (the last line of its error, clipped), `output_tail` (the last
    MAX_OUTPUT_TAIL bytes of what it printed: its stdout's end, then its stderr's; "" if nothing) and
    `ended_at` (the scheduler's wall clock, seconds)."""

    job_id: Id
    task: Id
    user: Name
    state: Name
    node: Name
    attempts: Count
    queue_wait: float
    run_time: float
    error: Annotated[str, msgspec.Meta(max_length=MAX_ERROR_SUMMARY)]
    output_tail: Annotated[str, msgspec.Meta(max_length=MAX_OUTPUT_TAIL)]
    ended_at: float


class TasksRequest(_Msg, tag=17):
    """Which recorded tasks to send back, newest first: only `user`'s ("": any the asker may see), only failed
    ones, only job `job_id` (-1: any), only those ended in the last `since` seconds (0: any), at most `limit`."""

    user: Name = ""
    failed: bool = False
    job_id: Annotated[int, msgspec.Meta(ge=-1, le=MAX_ID)] = -1
    since: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_TASK_RECORDS)] = MAX_TASK_RECORDS


class TasksReply(_Msg, tag=18):
    scheduler_id: str
    tasks: Annotated[list[TaskRecord], msgspec.Meta(max_length=MAX_TASK_RECORDS)]


# -- node monitor <-> scheduler --------------------------------------------------------------------


class RegisterNodeMonitor(_Msg, tag=20):
    """`instance` is random per node monitor process: a node monitor that registers again under its
    id (it redialed) replaces its old link, another process under a live id is refused."""

    node_id: Name
    slots: Annotated[int, msgspec.Meta(ge=1, le=MAX_SLOTS)]
    labels: Annotated[tuple[Name, ...], msgspec.Meta(max_length=MAX_LABELS)] = ()
    instance: Name = ""
    can_stop: bool = False  # its executor can stop a running task (timeouts, forced cancels)
    steal_address: AddressText = ""  # where it takes steal links from its peers; "": it does not steal
    data_address: AddressText = ""  # its data listener (runtime/data/): fetches and clients' uploads; "": none
    resources: ResourceUnits = msgspec.field(default_factory=dict)  # its capacity besides its slots, in units


class Registered(_Msg, tag=21):
    scheduler_id: Name


class RegistrationRefused(_Msg, tag=29):
    """The scheduler will not take this node monitor (its id is live on another link): a
    configuration error, so the node monitor stops with `reason` instead of retrying."""

    reason: str


class Heartbeat(_Msg, tag=22):
    """From a node monitor: its reservations waiting and busy slots, and whether it is draining (it
    takes no more reservations: the scheduler stops probing it and re-probes what it held). A
    scheduler's echo: zeros."""

    queued: Count = 0
    busy: Count = 0
    draining: bool = False


class EnqueueReservations(_Msg, tag=23):
    """`session`: the id of the job's client, which tags the values its tasks leave (ReleaseSession).
    `stealable`: the reservations may move to another node monitor (work stealing: the job has no
    constraint, preference or timeout)."""

    job_id: Id
    user: Name
    priority: Priority
    count: Annotated[int, msgspec.Meta(ge=1, le=MAX_PROBES_PER_JOB)]
    session: Name = ""
    stealable: bool = False
    resources: ResourceUnits | None = None  # what each of the job's tasks takes besides its slot (None: nothing)


class CancelReservations(_Msg, tag=24):
    job_id: Id


class GetTask(_Msg, tag=25):
    """`origin`: the id of the node monitor whose reservation this is (work stealing: the sender took it
    from there); "": the sender's own."""

    job_id: Id
    origin: Name = ""


class TaskToNode(_Msg, tag=26):
    """Scheduler -> node monitor, the answer to its GetTask: run task `task` of job `job_id`. `bound`: not an
    answer but sent unasked with the job's reservations to a node monitor the scheduler believes idle (the
    task is launched as far as the scheduler knows: it runs in the next free slot, ahead of the queue); its
    job's `user` and client `session` then come with it, as with EnqueueReservations."""

    job_id: Id
    task: Id
    payload: bytes
    timeout: Annotated[float, msgspec.Meta(ge=0)] = 0.0  # seconds it may run; 0: no limit
    bound: bool = False
    user: Name = ""
    session: Name = ""


class StopTask(_Msg, tag=32):
    """Stop a running task (its client cancelled it with force): the node monitor kills its worker."""

    job_id: Id
    task: Id


class NoTask(_Msg, tag=27):
    job_id: Id


class OutcomeToScheduler(_Msg, tag=28):
    """Node monitor -> scheduler: the task it was given by TaskToNode ended."""

    job_id: Id
    task: Id
    outcome: Outcome


class OutputToScheduler(_Msg, tag=57):
    """Node monitor -> scheduler: what task `task` of job `job_id`, given to it by TaskToNode, printed, cut at the
    node monitor's caps and naming it; sent just before the task's OutcomeToScheduler, only if it printed."""

    job_id: Id
    task: Id
    output: Output


class GiveBack(_Msg, tag=37):
    """Node monitor -> scheduler: task `task` of job `job_id`, given to it by TaskToNode and bound ahead behind a
    running task that overran, never started and never will here: no outcome of it follows from this node
    monitor. The scheduler un-launches it (give_back.py) so the job's next GetTask, from any node monitor, gets
    it. Only for a task launched to the sender and not finished: anything else is a protocol error."""

    job_id: Id
    task: Id


class ReleaseSession(_Msg, tag=33):
    """Scheduler -> node monitor: the client `session` is gone (not back within the scheduler's client
    grace): drop the values its tasks left here that belong to `user`, the session's certificate user (None:
    all of them; a client without one: an admin, or the insecure mode). Another user's client that claimed
    the same id at another scheduler thus drops only its own values."""

    session: Name
    user: Name | None = None


class StealPeers(_Msg, tag=34):
    """Scheduler -> a node monitor that steals: the steal addresses of the other ones it may steal from
    (replaces what this scheduler told before)."""

    peers: Annotated[list[AddressText], msgspec.Meta(max_length=MAX_STEAL_PEERS)]


# -- work stealing: node monitor (thief) -> node monitor (victim), services/steal.py ----------------


class StealProbe(_Msg, tag=50):
    """How much could you give? Answered by StealState."""


class StealState(_Msg, tag=51):
    """`stealable` reservations wait here for a slot (0 with a slot free), queued behind a task that has
    run `blocked_for` seconds (the kernel's choose_steal inputs)."""

    stealable: Count
    blocked_for: Annotated[float, msgspec.Meta(ge=0, le=MAX_BLOCKED_FOR)]


class StealTake(_Msg, tag=52):
    """Give me up to `count` reservations of jobs at the schedulers `schedulers` (the thief's, by id), whose
    requests fit together in `free` (the thief's free units by kind; None: it offers no resources, so only
    reservations that ask for none). Answered by Stolen (maybe empty)."""

    count: StealCount
    schedulers: Annotated[tuple[Name, ...], msgspec.Meta(max_length=MAX_STEAL_SCHEDULERS)]
    free: ResourceUnits | None = None


class StolenReservation(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One reservation moved: `count` of job `job_id` at scheduler `scheduler_id`, placed at the node
    monitor `origin` (its GetTask names it); `resources`: what each of its tasks takes besides its slot (None:
    nothing), kept where it goes."""

    scheduler_id: Name
    job_id: Id
    user: Name
    priority: Priority
    session: Name
    origin: Name
    count: StealCount = 1
    resources: ResourceUnits | None = None


class Stolen(_Msg, tag=53):
    """The reservations given (lent until released: the victim takes them back if the link ends)."""

    reservations: Annotated[list[StolenReservation], msgspec.Meta(max_length=MAX_STEAL_TAKE)]


class Released(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """`count` reservations of job `job_id` at scheduler `scheduler_id` the thief is done with: `used`
    (their GetTask was answered, or the job's reservations were cancelled), or given back unasked."""

    scheduler_id: Name
    job_id: Id
    count: StealCount
    used: bool


class StealRelease(_Msg, tag=54):
    """Thief -> victim: forget (used) or take back (not used) these lent reservations. No answer."""

    items: Annotated[list[Released], msgspec.Meta(max_length=MAX_STEAL_TAKE)]


# -- data plane: client or node monitor -> a node monitor's data address ---------------------------


class FetchValue(_Msg, tag=40):
    """Send the value `key`: answered by ValueHeader and its chunks, or ValueMissing (the link stays). `user`: a
    node monitor's, under TLS: the user of the task the value is for; only a value kept for that user is sent
    (a client's fetch is checked against its certificate's user instead)."""

    key: Key
    user: Name | None = None


class ValueHeader(_Msg, tag=41):
    """The value asked for is `size` bytes, in ValueChunks of `chunk` bytes each (the last one shorter)."""

    size: Size
    chunk: Annotated[int, msgspec.Meta(ge=1, lt=2**32)]


class ValueChunk(_Msg, tag=42):
    """Chunk `index` of the value announced by the ValueHeader before it (runtime/data/transfer.py)."""

    index: Annotated[int, msgspec.Meta(ge=0, lt=MAX_CHUNKS)]
    data: bytes


class ValueMissing(_Msg, tag=43):
    """The value asked for is not here (never was, released, or another user's)."""

    reason: str


class ReleaseValues(_Msg, tag=44):
    """The sender no longer needs these values (a client's own only; no answer)."""

    keys: Annotated[list[Key], msgspec.Meta(max_length=MAX_RELEASE_KEYS)]


class PutValue(_Msg, tag=45):
    """A client -> a node monitor's data address: keep a value of `size` bytes (pickled) for me. Answered by
    ValueHeader (go ahead: send it in ValueChunks of `chunk` bytes), then, once every chunk came, ValueKept;
    or by Error (refused: over the node monitor's max_value or memory limit), and the link closes."""

    size: Size


class ValueKept(_Msg, tag=46):
    """The value uploaded by the PutValue before is kept under `key` (as a task's result: ValueRef)."""

    key: Key


class FetchFile(_Msg, tag=47):
    """On a plain Unix data link (one host): send the value `key` as its sealed memory file itself, ValueFile
    with the file's descriptor; a value not in a memory file is answered as FetchValue is (data/links.py)."""

    key: Key
    user: Name | None = None


class ValueFile(_Msg, tag=48):
    """The value asked for is the `size` bytes of the sealed memory file whose descriptor comes with this
    frame (SCM_RIGHTS); the receiver checks its seals and size (data/shared.py)."""

    size: Size


# -- node monitor <-> worker process ---------------------------------------------------------------


Seq = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]  # a worker's TaskToWorker frames, numbered from 0


class TaskToWorker(_Msg, tag=30):
    """Node monitor -> worker process: run this packed task (task_codec.py); `inputs`, if any, are the
    pickled values of a dependent task's inputs, passed to its call last (data/dependent.py). The inputs
    at the indices `shared` are empty here: each comes as a memory file over the worker's side socket, in
    that order (data/shared.py)."""

    payload: bytes
    inputs: list[bytes] | None = None
    shared: Annotated[tuple[int, ...], msgspec.Meta(max_length=MAX_INPUTS)] = ()


class OutcomeToNode(_Msg, tag=31):
    """Worker process -> node monitor: the outcome of the task it started last; `shared`: its (ok) value
    is not in `outcome.payload` but in a memory file sent just before over the worker's side socket.
    `dropped`: the numbers (DropTask) of the tasks queued behind it that it dropped unstarted; the next
    task it was given and did not drop starts as this is sent (worker_main.py)."""

    outcome: Outcome
    shared: bool = False
    dropped: Annotated[tuple[Seq, ...], msgspec.Meta(max_length=MAX_INPUTS)] = ()


class OutputToNode(_Msg, tag=58):
    """Worker process -> node monitor: what the task it started last printed (task_output.py), cut at the worker's
    cap; sent in the same write as, just before, the task's OutcomeToNode, only if it printed."""

    output: Output


class WorkerReady(_Msg, tag=39):
    """Worker process -> node monitor, its first message: it has imported and serves, so a task given to it
    now starts at once (a task's timeout does not count the worker's start: worker_pool.py)."""


class DropTask(_Msg, tag=38):
    """Node monitor -> worker process: drop the task numbered `seq` (the worker's TaskToWorker frames count
    from 0) unstarted if it has not started it yet; the OutcomeToNode before it would start says so."""

    seq: Seq


Message = (
    Challenge
    | Authenticate
    | Welcome
    | Error
    | SubmitJob
    | CancelJob
    | JobAccepted
    | JobRejected
    | OutcomeToClient
    | OutputToClient
    | TaskStarted
    | StatusRequest
    | StatusReply
    | TasksRequest
    | TasksReply
    | RegisterNodeMonitor
    | Registered
    | RegistrationRefused
    | Heartbeat
    | EnqueueReservations
    | CancelReservations
    | GetTask
    | TaskToNode
    | StopTask
    | NoTask
    | OutcomeToScheduler
    | OutputToScheduler
    | GiveBack
    | ReleaseSession
    | StealPeers
    | StealProbe
    | StealState
    | StealTake
    | Stolen
    | StealRelease
    | FetchValue
    | FetchFile
    | ValueFile
    | ValueHeader
    | ValueChunk
    | ValueMissing
    | ReleaseValues
    | PutValue
    | ValueKept
    | TaskToWorker
    | OutcomeToNode
    | OutputToNode
    | DropTask
    | WorkerReady
)
