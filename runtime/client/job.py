"""What the client keeps of a submitted job, and the checks a job passes before anything is sent.

`Job` is plain data (no trio, no threads): the client logic (logic.py) changes it, its owner (a
`JobHandle`, or SparrowExecutor's futures) reads it. A job's tasks travel in one or more placements,
each a `SubmitJob` on the wire; the scheduler's outcomes come back per placement. `build_submit`
validates a job's settings and its size; `oversize_problem` and `split_jobs` say what fits one frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ..data.dependent import CodeRef
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.limits import MAX_TASKS_PER_JOB, job_problem
from ..wire.messages import Constraint, Output, SubmitJob
from ..wire.resources import ResourceError, parse_resources
from ..wire.task_codec import outcome_exception, unpack_outcome

FRAME_OVERHEAD_PER_TASK = 16  # msgpack bytes around each task payload in SubmitJob, generously
FRAME_OVERHEAD_PER_JOB = 1024  # bytes of a SubmitJob besides its tasks, generously
FRAME_OVERHEAD_PER_NAME = 8  # msgpack bytes around each node monitor id of task_prefer, generously
DEFAULT_RETRIES = 3  # as Ray: system failures are retried 3 times
_NONE: frozenset[int] = frozenset()  # a job's sets until they hold a task


def _with(tasks: AbstractSet[int], more: Iterable[int]) -> set[int]:
    """`tasks` with `more` added: the same set, or a new one in place of the shared empty one."""
    if not isinstance(tasks, set):
        tasks = set()
    tasks.update(more)
    return tasks


class Job:
    """A submitted job: its settings (a SubmitJob whose `tasks` are not used), each task's payload
    until it has an outcome, its attempts and its outcomes (an Outcome each, as the scheduler sent it
    or as the client decided it). `listener(events)` is called by the client's shell with the `(job,
    task)` pairs whose outcomes arrived, in order (one call for a run of events with the same
    listener); `owner` is its owner's (a JobHandle, a list of futures)."""

    __slots__ = (
        "__weakref__",  # the client's book of values names the task that made each one weakly (values.py)
        "at",
        "attempts",
        "calls",
        "cancelled",
        "cancelled_tasks",
        "coalesce",
        "code",
        "errors",
        "held",
        "job_id",
        "listener",
        "n_done",
        "n_tasks",
        "order",
        "outcomes",
        "outputs",
        "owner",
        "payloads",
        "ref",
        "retries",
        "retry_exceptions",
        "settings",
        "started",
        "task_resources",
        "unowned",
        "upload",
    )

    def __init__(
        self,
        settings: SubmitJob,
        payloads: list[bytes],
        *,
        retries: int = DEFAULT_RETRIES,
        retry_exceptions: bool = False,
        coalesce: bool = False,
        listener: Callable[[list[tuple[Job, int]]], None] | None = None,
        owner: Any = None,  # the shell's: a JobHandle, or the executor's futures, one per task
    ) -> None:
        n = len(payloads)
        self.settings = settings
        self.n_tasks = n
        self.payloads: list[bytes | None] = list(payloads)
        self.retries = retries
        self.retry_exceptions = retry_exceptions
        self.coalesce = coalesce  # may share a placement with other such jobs of the same settings
        self.code: CodeRef | None = None  # the code its tasks run in (client/code.py): its dependents' too
        self.upload = False  # a value the client uploads itself (Client.scatter): its payload is the value's bytes
        self.listener = listener
        self.owner = owner
        # per task, 1 once the scheduler said it handed it out to run (TaskStarted), for a job whose settings
        # ask (SubmitJob.report_started); set by the client's logic in its thread, read by the owner's (a
        # byte store: no lock)
        self.started = bytearray(n) if settings.report_started else None
        self.job_id: int | None = None  # the scheduler's id of its first placement, once accepted
        # Where each task is placed goes in dicts of numbers and the sets start as one shared empty frozenset (a set
        # of its own on first use, by the methods below): the garbage collector tracks neither, and it scans every
        # tracked object of every pending job, which in a loop of one-task submits was most of the client's time
        self.attempts = [0] * n
        self.outcomes: list = [None] * n
        self.outputs: dict[int, Output] | None = None  # what its tasks printed (the last attempt that did), if any
        self.order: list[int] = []  # tasks in the order their outcomes arrived
        self.n_done = 0
        self.cancelled = False  # the whole job
        self.cancelled_tasks: AbstractSet[int] = _NONE
        self.held: AbstractSet[int] = _NONE  # tasks waiting for other tasks' outcomes
        self.ref: dict[int, int] = {}  # the placement that holds each task (none: 0)
        self.at: dict[int, int] = {}  # its index in that placement
        self.errors: dict[int, BaseException] = {}  # outcomes decided here, with their exception
        self.calls: dict = {}  # dependent task -> its Waiting (call and inputs) from placement to its outcome
        self.unowned: AbstractSet[int] = _NONE  # tasks whose owner was dropped before their outcome came
        # each task's own request in units (None: a slot alone), when its tasks ask for different ones
        # (split_requests); None: every task asks for `settings.resources`
        self.task_resources: list[dict[str, int] | None] | None = None

    def done(self) -> bool:
        return self.n_done == self.n_tasks

    def hold(self, tasks: Iterable[int]) -> None:
        """`tasks` wait for other tasks' outcomes (or are the client's own upload): not placed nor relaunched."""
        self.held = _with(self.held, tasks)

    def unhold(self, task: int) -> None:
        held = self.held
        if isinstance(held, set):
            held.discard(task)

    def cancel_tasks(self, tasks: Iterable[int]) -> None:
        self.cancelled_tasks = _with(self.cancelled_tasks, tasks)

    def disown(self, task: int) -> None:
        """Task `task`'s owner was dropped before its outcome came."""
        self.unowned = _with(self.unowned, (task,))

    def exception(self, task: int) -> BaseException:
        """The exception failed task `task`'s outcome stands for."""
        error = self.errors.get(task)
        if error is not None:
            return error
        outcome = self.outcomes[task]
        return outcome_exception(outcome)

    def value(self, task: int) -> Any:
        """Task `task`'s value, or raise the exception its outcome stands for."""
        outcome = self.outcomes[task]
        if outcome.ok:
            assert outcome.ref is None, "a value kept at its node monitor is fetched by the client (Client.value_of)"
            return unpack_outcome(outcome)
        raise self.exception(task)

    def __repr__(self) -> str:
        return f"<Job {self.job_id}: {self.n_done} of {self.n_tasks} tasks done>"


@dataclass(frozen=True)
class JobOptions:
    """What one job sets apart from its executor's defaults (None, empty: the executor's): its `priority`
    (lower first), the node monitors it may run on (`node_monitors`: a constraint) or is probed at first
    (`prefer`: a preference), its `retries`, whether a task's own exception is retried too
    (`retry_exceptions`), and what each task takes besides its slot (`resources`: {name: amount} or
    "name=amount,...", docs/resources.md; a mapping is kept as its sorted (name, amount) pairs, and a bad
    amount is a ValueError here). Hashable: calls with equal options may share a job."""

    priority: int | None = None
    node_monitors: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()
    retries: int | None = None
    retry_exceptions: bool | None = None
    resources: Any = None

    def __post_init__(self) -> None:
        parse_resources(self.request())  # checked now
        if isinstance(self.resources, Mapping):
            object.__setattr__(self, "resources", tuple(sorted(self.resources.items())))

    def request(self) -> str | dict[str, object] | None:
        """`resources` as build_submit takes it (None: the executor's)."""
        return dict(self.resources) if isinstance(self.resources, tuple) else self.resources


def check_retries(retries: int) -> int:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, got {retries!r}")
    return retries


Request = str | Mapping[str, object] | None  # what one task takes besides its slot (wire/resources.py)


def split_requests(
    resources: Request | Sequence[Request], n_tasks: int
) -> tuple[Request, list[dict[str, int] | None] | None]:
    """`resources` of a job of `n_tasks` tasks as (the request of every task, for build_submit; each
    task's own in units, or None when they are all the same). One request (a str, a mapping or None)
    is every task's; a sequence of requests is one per task (None: a slot alone).

    Error handling: ValueError for the wrong number of entries, ResourceError (a ValueError) naming
    the task whose amount is bad."""
    if resources is None or isinstance(resources, (str, Mapping)):
        return resources, None
    if not isinstance(resources, Sequence):
        raise TypeError(
            f"resources must be a request (a str or a mapping) or a sequence of them, got {type(resources).__name__}"
        )
    if len(resources) != n_tasks:
        raise ValueError(f"resources has {len(resources)} entries for {n_tasks} tasks (one per task, or one request)")
    units: list[dict[str, int] | None] = []
    for i, request in enumerate(resources):
        try:
            units.append(parse_resources(request) or None)
        except ResourceError as e:
            raise ResourceError(f"resources[{i}] (task {i}): {e}") from None
    if all(u == units[0] for u in units):
        return (resources[0] if units else None), None
    return None, units


def build_submit(
    payloads: list[bytes],
    user: str,
    priority: int,
    probe_ratio: float | None,
    constraints: Constraint | Sequence[Constraint | None] | None,
    max_frame: int = DEFAULT_MAX_FRAME,
    timeout: float | None = None,
    prefer: Sequence[Sequence[str] | None] | None = None,
    sampling: str = "batch",
    resources: str | Mapping[str, object] | None = None,
) -> SubmitJob:
    """Validate a job and build its SubmitJob (ref set when sent). `prefer`: None, or one entry per
    task, None or the ids of the node monitors it should be probed at first (SubmitJob.task_prefer).
    `sampling`: "batch" or "per_task" (SubmitJob.sampling). `resources`: what each task takes besides its
    slot, {name: amount} or "name=amount,..." (wire/resources.py, docs/resources.md).

    Error handling: ValueError/TypeError naming the bad argument."""
    if not payloads:
        raise ValueError("tasks must contain at least one task")
    if not isinstance(user, str):
        raise TypeError(f"user must be a str, got {type(user).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {type(priority).__name__}")
    job_constraint, task_constraints = None, None
    if isinstance(constraints, Constraint):
        job_constraint = _normalise(constraints)
    elif constraints is not None:
        task_constraints = list(constraints)
        if len(task_constraints) != len(payloads):
            raise ValueError(
                f"constraints has {len(task_constraints)} entries for {len(payloads)} tasks "
                "(one per task, or one Constraint)"
            )
        for i, c in enumerate(task_constraints):
            if c is not None and not isinstance(c, Constraint):
                raise TypeError(f"constraints[{i}] must be a Constraint or None, got {type(c).__name__}")
        task_constraints = [None if c is None else _normalise(c) for c in task_constraints]
    task_prefer = None if prefer is None else _task_prefer(prefer, len(payloads))
    if not isinstance(sampling, str):
        raise TypeError(f"sampling must be a str, got {type(sampling).__name__}")
    units = parse_resources(resources) or None
    problem = job_problem(
        len(payloads), user, priority, probe_ratio, job_constraint, task_constraints, timeout, task_prefer, sampling
    )
    if problem is not None:
        raise ValueError(problem)
    extra = 0
    if task_prefer is not None:
        extra = sum(len(name) + FRAME_OVERHEAD_PER_NAME for nodes in task_prefer for name in nodes)
    problem = job_size_problem(payloads, max_frame, extra)
    if problem is not None:
        raise ValueError(problem)
    return SubmitJob(
        0,
        payloads,
        user,
        priority,
        None if probe_ratio is None else float(probe_ratio),
        job_constraint,
        task_constraints,
        None if timeout is None else float(timeout),
        task_prefer,
        sampling,
        units,
    )


def _task_prefer(prefer: Sequence[Sequence[str] | None], n_tasks: int) -> list[tuple[str, ...]] | None:
    """`prefer` as SubmitJob.task_prefer (None when no task prefers a node monitor); TypeError for a
    bare str where a sequence of ids belongs, ValueError for the wrong number of entries."""
    if isinstance(prefer, str):
        raise TypeError("prefer must be one entry per task (None or node monitor ids), not a str")
    entries = list(prefer)
    if len(entries) != n_tasks:
        raise ValueError(f"prefer has {len(entries)} entries for {n_tasks} tasks (one per task)")
    out: list[tuple[str, ...]] = []
    for i, nodes in enumerate(entries):
        if nodes is None:
            out.append(())
            continue
        if isinstance(nodes, str):
            raise TypeError(f"prefer[{i}] must be a sequence of node monitor ids, not a str")
        ids = tuple(nodes)
        for name in ids:
            if not isinstance(name, str):
                raise TypeError(f"prefer[{i}]: node monitor ids are str, got {type(name).__name__}")
        out.append(ids)
    return out if any(out) else None


def _normalise(c: Constraint) -> Constraint:
    nodes, labels = c.node_monitors, c.labels
    if isinstance(nodes, str) or isinstance(labels, str):
        raise TypeError("Constraint.node_monitors and .labels must be sequences of str, not a str")
    return Constraint(tuple(str(n) for n in nodes), tuple(str(label) for label in labels))


def job_size_problem(payloads: Sequence[bytes], max_frame: int, extra: int = 0) -> str | None:
    """Why a job of `payloads` (with `extra` bytes of per-task settings: preferences) cannot be sent under
    `max_frame`, or None. Its size is counted, not encoded: the payloads' lengths with a generous allowance
    for what msgpack puts around them (FRAME_OVERHEAD_PER_TASK, FRAME_OVERHEAD_PER_JOB), so a job that passes
    fits its frame."""
    size = sum(map(len, payloads)) + FRAME_OVERHEAD_PER_TASK * len(payloads) + FRAME_OVERHEAD_PER_JOB + extra
    if size <= max_frame:
        return None
    return (
        f"the job's tasks take about {size} bytes, over the frame limit of {max_frame} bytes: "
        "submit fewer or smaller tasks"
    )


def oversize_problem(size: int, max_frame: int) -> str | None:
    """Why a task payload of `size` bytes cannot be sent under `max_frame`, or None."""
    if size + FRAME_OVERHEAD_PER_TASK + FRAME_OVERHEAD_PER_JOB <= max_frame:
        return None
    return (
        f"the task with its inputs takes {size:,} bytes, over the frame limit of {max_frame:,} bytes: its "
        "arguments and the inputs that travel with it (results under their node monitor's inline limit) must fit "
        "in one frame (docs/runtime.md, Dependencies and Dask)"
    )


def split_jobs(sizes: Sequence[int], max_frame: int) -> list[range]:
    """Consecutive groups of tasks (by their payload sizes, each one fitting alone) that each fit one job."""
    n = len(sizes)
    if n <= MAX_TASKS_PER_JOB and sum(sizes) + FRAME_OVERHEAD_PER_TASK * n + FRAME_OVERHEAD_PER_JOB <= max_frame:
        return [range(n)] if n else []  # all in one: what the loop below finds, without its step per task
    groups = []
    start, used = 0, FRAME_OVERHEAD_PER_JOB
    for i, size in enumerate(sizes):
        cost = size + FRAME_OVERHEAD_PER_TASK
        if i > start and (used + cost > max_frame or i - start >= MAX_TASKS_PER_JOB):
            groups.append(range(start, i))
            start, used = i, FRAME_OVERHEAD_PER_JOB
        used += cost
    if start < len(sizes):
        groups.append(range(start, len(sizes)))
    return groups
