"""Every limit on what a peer may send or make a service hold, in one place (docs/runtime.md,
"Limits and failure behaviour", lists them with what a peer over each one gets).

The message fields' limits are declared on the messages themselves (messages.py) from these
constants and checked by the decoder, except SubmitJob's: a job over a limit is answered with
JobRejected naming the field and the limit (`job_problem`, used by both the client, before
sending, and the scheduler). `clip` shortens peer-supplied text before it goes into a log line or
an error message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from .resources import units_problem


class Constrained(Protocol):
    """What the checks read of a messages.Constraint (messages.py imports this module: no import back)."""

    @property
    def node_monitors(self) -> Sequence[str]: ...
    @property
    def labels(self) -> Sequence[str]: ...


# -- text ------------------------------------------------------------------------------------------
MAX_NAME = 200  # characters of an id, a role, a user, a label
MAX_REASON = 1000  # characters of an Error / JobRejected reason / failure text this side composes
CLIP = 200  # characters of peer-supplied text quoted in a log line or an error message

# -- jobs ------------------------------------------------------------------------------------------
MAX_TASKS_PER_JOB = 100_000
MAX_PROBE_RATIO = 100.0
MAX_PROBES_PER_JOB = 200_000  # ceil(probe_ratio x tasks), across every node monitor
MAX_LABELS = 64  # labels of a node monitor or a constraint
MAX_CONSTRAINT_NODES = 10_000  # node monitor ids named by one constraint
MAX_PREFERRED_NODES = 64  # node monitor ids one task may prefer (SubmitJob.task_prefer)
MAX_PREFERRED_PER_JOB = 200_000  # node monitor ids all of a job's tasks prefer, together
MAX_TIMEOUT = 30 * 24 * 3600.0  # seconds a job's task may be allowed to run
SAMPLINGS = ("batch", "per_task")  # how a job's probes are drawn (SubmitJob.sampling)
PRIORITY_MIN, PRIORITY_MAX = -(2**31), 2**31 - 1  # the kernel's sparrow_core.PRIORITY_RANGE
MAX_ID = 2**63 - 1  # job ids, refs, task indexes

# -- task history (services/task_history.py) -------------------------------------------------------
MAX_TASK_RECORDS = 1000  # task records in one TasksReply (newest first)
MAX_ERROR_SUMMARY = 300  # characters of a task record's error summary
MAX_OUTPUT_TAIL = 4096  # characters of a task record's output tail

# -- a task's captured output (services/task_output.py) --------------------------------------------
MAX_OUTPUT = 1024 * 1024  # bytes of each of a task's stdout and stderr one outcome carries (a node monitor's cap <= it)

# -- node monitors ---------------------------------------------------------------------------------
MAX_SLOTS = 4096  # slots one node monitor may register
MAX_QUEUED_RESERVATIONS = 1_000_000  # reservations one node monitor holds, from all schedulers
MAX_COUNT = 2**31 - 1  # heartbeat counters

# -- work stealing between node monitors (services/steal.py) ---------------------------------------
MAX_STEAL_PEERS = 1024  # peer addresses in one StealPeers (a scheduler samples that many when it has more)
MAX_STEAL_TAKE = 64  # reservations asked for, moved or released in one steal message
MAX_STEAL_SCHEDULERS = 64  # scheduler ids a thief names in one StealTake
MAX_BLOCKED_FOR = 1e9  # seconds a victim may say its slot has been held (StealState)

# -- values (the data plane: runtime/data/) ---------------------------------------------------------
DEFAULT_INLINE_LIMIT = 64 * 1024  # bytes of a result above which it stays at its node monitor (a reference goes)
DEFAULT_MAX_VALUE = 1024**3  # bytes of one value kept, sent in chunks, or given to a task as its inputs together
MAX_VALUE_SIZE = 2**40  # the largest size a reference or a transfer header may state at all
MAX_KEY = 32  # bytes of a value's key (this side makes them of KEY_SIZE random bytes)
KEY_SIZE = 16
MAX_ADDRESS = 1000  # characters of a data address in a reference ("HOST:PORT" or "unix:PATH")
CHUNK_SIZE = 4 * 1024 * 1024  # bytes of one chunk of a transfer (and at most the link's frame limit less overhead)
MAX_CHUNKS = 100_000  # chunks of one value (1 GiB in chunks of the smallest frame a peer may tell: 16,644)
MAX_RELEASE_KEYS = 100_000  # keys in one ReleaseValues
MAX_INPUTS = 100_000  # inputs of one task that travel as references

# -- connections -----------------------------------------------------------------------------------
HANDSHAKE_MAX_FRAME = 8192  # bytes of a frame before the handshake completes
MAX_PENDING_HANDSHAKES = 64  # connections of one listener that have not finished the handshake (gate.py)
MAX_PENDING_PER_SOURCE = 16  # of those, from one source address
MIN_UNSENT_LIMIT = 16 * 1024 * 1024  # bytes queued for one peer, at the least (the memory bound)
STALL_TIMEOUT = 10.0  # seconds a peer may accept no byte while bytes wait for it: then it does not read
LINK_FULL = 1024 * 1024  # unsent bytes past which a link is full: senders that can wait, wait (send_later)
MIN_PEER_FRAME = 64 * 1024  # the smallest max_frame a peer may tell at the handshake (see peer_frame_problem)


def unsent_limit(max_frame: int) -> int:
    """The memory bound of one connection: the bytes it may hold encoded for its peer before the peer
    is dropped, four of the largest frames and at least MIN_UNSENT_LIMIT. Senders that wait while
    their link is full (clients, node monitors) stay near LINK_FULL + one frame; the bound is for
    what a scheduler relays to a peer that reads too slowly. A peer that stops reading altogether is
    dropped after STALL_TIMEOUT whatever it holds."""
    return max(4 * max_frame, MIN_UNSENT_LIMIT)


def peer_frame_problem(told: int, own: int) -> str | None:
    """Why a peer's announced max_frame `told` (0: not told) is refused by a side whose own is `own`:
    under MIN_PEER_FRAME (or under `own`, if that is smaller), a lying or misconfigured peer would make
    every task or outcome it is sent fail as too large. None if it is acceptable."""
    floor = min(MIN_PEER_FRAME, own)
    if told == 0 or told >= floor:
        return None
    return f"its max_frame of {told} bytes is under the floor of {floor} bytes (a peer must accept frames that large)"


MESSAGE_OVERHEAD = 1024  # bytes of a task's or an outcome's message besides its payload and text, generously


def too_large(what: str, size: int, limit: int, where: str) -> str | None:
    """Why `what` of `size` bytes (payload and text) cannot go in a frame of at most `limit` bytes
    (the smaller max_frame of a link, `where`: "to scheduler X"), naming both; None if it fits."""
    if size + MESSAGE_OVERHEAD <= limit:
        return None
    return f"{what} of {size} bytes is over the frame limit of {limit} bytes {where}"


def clip(text: object, limit: int = CLIP) -> str:
    """`text` as a str of at most about `limit` characters, its control characters escaped: safe to
    put in a log line or an error message whatever a peer sent."""
    if not isinstance(text, str):
        text = repr(text)
    head = text[:limit]
    shown = head.encode("unicode_escape").decode("ascii") if not head.isprintable() else head
    if len(text) > limit:
        shown += f"... ({len(text)} characters)"
    return shown


def job_problem(
    n_tasks: int,
    user: str,
    priority: int,
    probe_ratio: float | None,
    constraint: Constrained | None,
    task_constraints: Sequence[Constrained | None] | None,
    timeout: float | None = None,
    task_prefer: Sequence[Sequence[str]] | None = None,
    sampling: str = "batch",
    resources: object = None,
) -> str | None:
    """Why a job with these fields is over a limit or malformed, naming the field and the limit; or
    None. `probe_ratio` None means the scheduler's default (checked when it is set)."""
    if n_tasks < 1:
        return "a job needs at least one task"
    if n_tasks > MAX_TASKS_PER_JOB:
        return f"tasks: {n_tasks} tasks, over the limit of {MAX_TASKS_PER_JOB} per job"
    if len(user) > MAX_NAME:
        return f"user: {len(user)} characters, over the limit of {MAX_NAME}"
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        return f"priority: {clip(priority)} is outside [{PRIORITY_MIN}, {PRIORITY_MAX}]"
    if probe_ratio is not None:
        problem = probe_problem(probe_ratio, n_tasks)
        if problem is not None:
            return problem
    if constraint is not None:
        problem = constraint_problem(constraint, "constraint")
        if problem is not None:
            return problem
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT
    ):
        return f"timeout: must be a number of seconds in (0, {MAX_TIMEOUT:g}], got {clip(timeout)}"
    if task_constraints is not None:
        if len(task_constraints) != n_tasks:
            return f"task_constraints: {len(task_constraints)} entries for {n_tasks} tasks"
        for i, c in enumerate(task_constraints):
            problem = None if c is None else constraint_problem(c, f"task_constraints[{i}]")
            if problem is not None:
                return problem
    if sampling not in SAMPLINGS:
        return f"sampling: {clip(sampling)!r} is not one of {', '.join(SAMPLINGS)}"
    if resources is not None:
        problem = units_problem(resources)
        if problem is not None:
            return problem
    if task_prefer is not None:
        return prefer_problem(task_prefer, n_tasks)
    return None


def prefer_problem(task_prefer: Sequence[Sequence[str]], n_tasks: int) -> str | None:
    """Why `task_prefer` (per task, the node monitor ids it prefers) is malformed or over a limit, or None."""
    if len(task_prefer) != n_tasks:
        return f"task_prefer: {len(task_prefer)} entries for {n_tasks} tasks"
    total = 0
    for i, nodes in enumerate(task_prefer):
        if len(nodes) > MAX_PREFERRED_NODES:
            return f"task_prefer[{i}]: names {len(nodes)} node monitors, over the limit of {MAX_PREFERRED_NODES}"
        total += len(nodes)
        for name in nodes:
            if len(name) > MAX_NAME:
                return f"task_prefer[{i}]: a name of {len(name)} characters, over the limit of {MAX_NAME}"
    if total > MAX_PREFERRED_PER_JOB:
        return f"task_prefer: names {total} node monitors in all, over the limit of {MAX_PREFERRED_PER_JOB} per job"
    return None


def probe_problem(probe_ratio: float, n_tasks: int) -> str | None:
    """Why `probe_ratio` for a job of `n_tasks` is not allowed, or None."""
    import sparrow_core  # here, not at the top: an executor worker imports this module without numpy

    try:
        sparrow_core.check_probe_ratio(probe_ratio)
    except (TypeError, ValueError) as exc:
        return clip(str(exc), MAX_REASON)
    if probe_ratio > MAX_PROBE_RATIO:
        return f"probe_ratio: {probe_ratio:g} is over the limit of {MAX_PROBE_RATIO:g}"
    probes = math.ceil(probe_ratio * n_tasks)
    if probes > MAX_PROBES_PER_JOB:
        return (
            f"probe_ratio: {probe_ratio:g} x {n_tasks} tasks makes {probes} probes, over the limit of "
            f"{MAX_PROBES_PER_JOB} per job"
        )
    return None


def constraint_problem(constraint: Constrained, field: str) -> str | None:
    if len(constraint.node_monitors) > MAX_CONSTRAINT_NODES:
        return f"{field}: names {len(constraint.node_monitors)} node monitors, over the limit of {MAX_CONSTRAINT_NODES}"
    if len(constraint.labels) > MAX_LABELS:
        return f"{field}: has {len(constraint.labels)} labels, over the limit of {MAX_LABELS}"
    for name in (*constraint.node_monitors, *constraint.labels):
        if len(name) > MAX_NAME:
            return f"{field}: a name of {len(name)} characters, over the limit of {MAX_NAME}"
    return None
