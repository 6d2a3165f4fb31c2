"""The node monitor's executors: the pools of worker processes or threads that run the tasks it launched.

Both have the same small interface: `await start(nursery)`; `launch(payload, done, inputs=None, user="") ->
Ticket`, which starts a task of `user` (`inputs`: the pickled values of a dependent's inputs, given to its call
last, so that the node monitor does not pickle big values into its payload again) and later calls
`done(outcome)` (an `Outcome`, messages.py) from the trio thread (never for a task's failure raising:
every failure is an outcome); `stop(ticket, failure, reason)`,
which ends a task before its time (a timeout, a forced cancel) where `can_stop`;
`await run(payload) -> Outcome`, the same as a coroutine; `await aclose()`. The node monitor never
runs more tasks at once than it has slots, and each executor has exactly that many workers; a
launch while none is free waits for one.

`launch` exists so a node monitor starts a task without a trio task, channel or thread hop of its
own per task: at a few hundred microseconds of CPU per task, each wake-up counts (docs/runtime.md).

- ProcessExecutor (default): worker processes (worker_main.py), each in a session of its own, over a
  private Unix socket pair with one long-lived reader task. A worker serves one user: it belongs to the
  user of its first task and never runs another user's (idle_workers.py), so a task that changes its
  interpreter (a module's globals, builtins) or reads its own memory finds only its user's tasks. It
  starts with one fresh worker per slot; a task whose user has no idle worker takes a fresh one, else a
  worker is started for it (at most `slots` + SPARE_WORKERS alive: past that the one idle longest is
  retired), so one user's tasks never wait for a process to start once its workers are warm. A worker
  starts as worker_starts.py's policy says: forked from a fork server that has imported what a worker
  needs (about 1 ms), else spawned as a new interpreter (about 70 ms of CPU).
  The node monitor learns of a worker's death from the process itself (not from the socket, which a
  process the task forked may hold open): the task it ran fails with the reason (exit status or
  signal) at once, its process group is killed (what the task started), and a fresh worker replaces
  it; the slot is never lost.
  A worker takes tasks once it says WorkerReady (it has imported), so a task launched while it starts
  waits here, and its timeout counts from when a worker takes it (`started`), not the worker's start.
  Workers die with the node monitor however it dies (worker_main.py watches its line). A task is
  stopped by killing its worker (and its process group); the worker is replaced the same way.
- ThreadExecutor: tasks run in `slots` persistent worker threads of the node monitor's process (tests
  and benchmarks; every user's tasks share them: no isolation), each woken by a byte over a socket pair
  of its own, and waking the trio loop the same way when the outcome is ready: cheap, but a task that
  crashes the interpreter takes the node monitor with it, and a running task cannot be stopped
  (`can_stop` is False).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import socket
import threading
from collections import Counter, deque
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import trio

from ..data import shared
from ..errors import ProtocolError
from ..wire.connection import Connection
from ..wire.framing import DEFAULT_MAX_FRAME
from ..wire.messages import (
    CANCELLED,
    SYSTEM,
    TOO_LARGE,
    DropTask,
    Outcome,
    OutcomeToNode,
    Output,
    OutputToNode,
    TaskToWorker,
    WorkerReady,
    failed,
)
from ..wire.task_codec import run_task
from .burst import Burst
from .idle_workers import IdleWorkers
from .memory_limit import memory_limits
from .processes import describe_exit
from .task_output import DEFAULT_OUTPUT_CAP
from .task_users import task_users
from .worker_starts import WorkerProcess, worker_starts

logger = logging.getLogger(__name__)

REAP_TIMEOUT = 2.0  # how long a dead or killed worker may take to be reaped
# idle workers a process executor keeps beyond one per slot, for users whose tasks come and go: past
# `slots` + this many alive, the one idle longest is retired to start one for a user with none idle
SPARE_WORKERS = 8

Done = Callable[[Outcome], None]


class Ticket:
    """A launched task: its payload and callback, and the worker running it (None while it waits).

    Handed ahead (ProcessExecutor.hand_ahead): queued in a busy worker, with no callback until it starts
    (`adopt`); `tag` is the caller's name for it, `seq` its number at its worker, `withdrawn` set once the
    caller gave it up, `ended` its outcome if it ended before it was adopted (the caller reports the outcomes of
    a read once it is handled). `successor`: the task handed ahead that started on this one's worker as it ended.
    `output`: what it printed (an Output, OutputToNode), once its worker sent it ahead of its outcome."""

    __slots__ = (
        "done",
        "ended",
        "inputs",
        "memory",
        "output",
        "payload",
        "seq",
        "successor",
        "tag",
        "user",
        "waited",
        "withdrawn",
        "worker",
    )

    def __init__(
        self, payload: bytes, done: Done | None, inputs: list | None = None, user: str = "", memory: int = 0
    ) -> None:
        self.payload = payload
        self.inputs = inputs
        self.user = user  # whose task: only a worker of this user (or a fresh one) runs it
        self.memory = memory  # bytes its worker is held to (memory_limit.py; 0: none asked)
        self.done: Done | None = done  # None once called
        self.worker: _Thread | _Worker | None = None
        self.tag: Any = None
        self.seq = -1
        self.successor: Ticket | None = None
        self.withdrawn = False
        self.ended: Outcome | None = None
        self.waited = False  # launched while no worker was idle: `started` is called when one takes it
        self.output: Output | None = None


async def wait_for_outcome(launch: Callable[[bytes, Done], Ticket], payload: bytes) -> Outcome:
    """`launch(payload, done)` and wait for `done`'s outcome. If cancelled, the task still runs to
    its end; its outcome is dropped."""
    outcome: Outcome | None = None
    finished = trio.Event()

    def done(result: Outcome) -> None:
        nonlocal outcome
        outcome = result
        finished.set()

    launch(payload, done)
    await finished.wait()
    assert outcome is not None  # done() set it
    return outcome


class _Pool:
    """What both executors share: tasks wait for an idle worker that may take their user's tasks
    (idle_workers.py) and each outcome frees its worker for the next. A subclass starts workers, hands a
    task over (`_hand`, which may claim the worker for the task's user), starts workers when tasks wait
    that no idle worker may take (`_short_of_workers`), calls `_finished` with each outcome and, if it can
    stop a running task, implements `_stop_running`."""

    can_stop = False
    takes_inputs = True  # launch(payload, done, inputs)

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._idle = IdleWorkers()
        self._waiting: deque[Ticket] = deque()  # launched while no worker was idle
        # called with a ticket that waited for a worker as one takes it (its task's timeout starts then)
        self.started: Callable[[Ticket], None] | None = None

    def launch(self, payload: bytes, done: Done, inputs: list | None = None, user: str = "", memory: int = 0) -> Ticket:
        ticket = Ticket(payload, done, inputs, user, memory)
        self._waiting.append(ticket)
        self._dispatch()
        ticket.waited = ticket.worker is None
        return ticket

    async def run(self, payload: bytes) -> Outcome:
        return await wait_for_outcome(self.launch, payload)

    def stop(self, ticket: Ticket, failure: int, reason: str) -> bool:
        """End `ticket`'s task now with (failure, reason): a waiting one is dropped, a running one is
        stopped where `can_stop`. Returns whether it was ended (False: already done, or cannot be)."""
        if ticket.done is None:
            return False
        if ticket.worker is None:
            self._waiting.remove(ticket)
            done, ticket.done = ticket.done, None
            done(failed(reason, failure))
            return True
        return self.can_stop and self._stop_running(ticket, failure, reason)

    def _dispatch(self) -> None:
        """Hand each waiting task, in order, to an idle worker that may take it; the others keep their order."""
        waiting = self._waiting
        if not waiting:
            return
        unserved = 0
        for _ in range(len(waiting)):
            ticket = waiting.popleft()
            worker = self._idle.take(ticket.user)
            while worker is not None and not self._usable(worker):  # died while idle: its reader replaces it
                worker = self._idle.take(ticket.user)
            if worker is None:
                waiting.append(ticket)
                unserved += 1
                continue
            ticket.worker, worker.ticket = worker, ticket
            self._hand(worker, ticket)
            ticket.inputs = None  # handed over: the values go with the worker, not the ticket
            if ticket.waited and self.started is not None:
                self.started(ticket)
        if unserved:
            self._short_of_workers()

    def _finished(self, worker: Any, outcome: Outcome, successor: Ticket | None = None) -> None:
        """`worker`'s task ended with `outcome`; `successor`, a task handed ahead to it, runs on it now."""
        ticket, worker.ticket = worker.ticket, successor
        if successor is None:
            self._idle.put(worker)
        elif not successor.withdrawn:
            ticket.successor = successor
        done, ticket.done = ticket.done, None
        if done is not None:
            done(outcome)
        elif not ticket.withdrawn:  # handed ahead, not adopted yet: `adopt` gives it its outcome
            ticket.ended = outcome
        # else given up (withdrawn): nobody waits for it

    def _usable(self, worker: Any) -> bool:
        return True

    def _hand(self, worker: Any, ticket: Ticket) -> None:
        raise NotImplementedError

    def _short_of_workers(self) -> None:
        """Tasks wait that no idle worker may take (ThreadExecutor: none do; its threads take any task)."""

    def _stop_running(self, ticket: Ticket, failure: int, reason: str) -> bool:
        raise NotImplementedError


class _Thread:
    __slots__ = ("inputs", "outcome", "payload", "sock", "task_user", "ticket")

    user = None  # a thread takes any user's task: threads of one process cannot be kept apart

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock  # the trio side of its socket pair
        self.ticket: Ticket | None = None
        self.payload = b""
        self.inputs: list | None = None
        self.task_user = ""  # whose task it runs (the functions it ships are kept per user: wire/shipped.py)
        self.outcome: Outcome | None = failed("no task ran yet")  # each task's replaces it before the thread signals


class ThreadExecutor(_Pool):
    """Runs each task in one of `slots` persistent worker threads of this process.

    Each thread shares a socket pair with the node monitor's trio loop, and a byte each way says "a
    task is ready" / "its outcome is ready" (the task and the outcome stay Python objects). Measured
    in a cluster: 8% less CPU per task than a queue with `run_sync_soon`, whose entry-queue task
    costs the trio loop an extra task switch per outcome."""

    def __init__(self, slots: int) -> None:
        super().__init__(slots)
        self._threads: list[_Thread] = []

    async def start(self, nursery: trio.Nursery) -> None:
        for i in range(self.slots):
            ours, theirs = socket.socketpair()
            ours.setblocking(False)
            worker = _Thread(ours)
            threading.Thread(target=_run_tasks, args=(theirs, worker), name=f"sparrow-task-{i}", daemon=True).start()
            self._threads.append(worker)
            nursery.start_soon(self._serve, worker)
            self._idle.put(worker)

    async def aclose(self) -> None:
        """Let the threads end once their current task is done (they are daemons: a stuck task does
        not keep the process alive)."""
        for worker in self._threads:
            trio.lowlevel.notify_closing(worker.sock)  # its reader stops waiting on it
            worker.sock.close()  # and the thread's next read ends
        self._threads.clear()

    def _hand(self, worker: _Thread, ticket: Ticket) -> None:
        worker.payload = ticket.payload
        worker.inputs = ticket.inputs
        worker.task_user = ticket.user
        worker.sock.send(b"\0")

    async def _serve(self, worker: _Thread) -> None:
        """Deliver the thread's outcomes until the executor closes."""
        sock = worker.sock
        while True:
            try:
                await trio.lowlevel.wait_readable(sock)
                signal = sock.recv(64)
            except BlockingIOError:
                continue
            except (OSError, trio.ClosedResourceError):  # closed by aclose
                return
            if not signal:  # the thread is gone (it only leaves when its socket closes)
                return
            outcome, worker.outcome = worker.outcome, None
            assert outcome is not None  # the thread sets it before it signals
            self._finished(worker, outcome)
            self._dispatch()


def _run_tasks(sock: socket.socket, worker: _Thread) -> None:
    """A worker thread: run each task it is handed until the node monitor closes its end."""
    with sock, contextlib.suppress(OSError):  # OSError: the node monitor closed its end
        while sock.recv(1):
            worker.outcome = run_task(worker.payload, worker.inputs, user=worker.task_user)
            worker.payload, worker.inputs = b"", None
            sock.send(b"\0")


class _Worker:
    __slots__ = (
        "conn",
        "overran",
        "process",
        "queued",
        "ready",
        "retired",
        "sent",
        "side",
        "stopped",
        "ticket",
        "user",
    )

    def __init__(
        self, process: WorkerProcess, conn: Connection, side: socket.socket | None = None, user: str | None = None
    ) -> None:
        self.process = process
        self.user = user  # the user whose tasks it runs (None: fresh, it has run none; the first one's user takes it)
        self.retired = False  # killed idle to make room for another user's worker: not replaced
        self.conn = conn
        self.side = side  # the side socket that memory files cross (shared.py), if any
        self.ticket: Ticket | None = None  # the task it runs, if any
        self.queued: deque[Ticket] = deque()  # handed ahead behind it, in order, not started
        self.sent = 0  # TaskToWorker frames sent (the next one's number)
        self.stopped: tuple[int, str] | None = None  # (failure, reason) if its task was stopped
        self.overran = 0  # answers that came after its task was stopped: so many queued ones started
        self.ready = False  # it said WorkerReady (imported): it takes tasks from then on

    def send_task(self, msg: TaskToWorker, out: _ToWorkers) -> int:
        """Send `msg` (through `out`); its number at the worker."""
        out.send(self, msg)
        self.sent += 1
        return self.sent - 1


class _ToWorkers:
    """The messages for the workers while a Burst is held: one write per worker when it ends."""

    __slots__ = ("_held", "burst")

    def __init__(self, burst: Burst) -> None:
        self.burst = burst
        self._held: dict[_Worker, list] = {}
        burst.on_release(self.flush)

    def send(self, worker: _Worker, msg: TaskToWorker | DropTask) -> None:
        if not self.burst.held:
            worker.conn.send(msg)
            return
        msgs = self._held.get(worker)
        if msgs is None:
            self._held[worker] = [msg]
        else:
            msgs.append(msg)

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, {}
            for worker, msgs in held.items():
                worker.conn.send_many(msgs)


class ProcessExecutor(_Pool):
    """Worker processes, each serving one user (module docstring); a dead worker fails its task and is
    replaced; a task is stopped by killing its worker. With `task_user` (an OS user's name, or a pattern
    with {user}: task_users.py) the workers run as that OS user (per cluster user, for a pattern), its group
    and no other group, with its home as HOME: a task cannot read what only the service's user may (its
    key, certificate, secret: mode 0600). That needs a node monitor that may switch users (root, or
    CAP_SETUID, CAP_SETGID and CAP_KILL).

    Error handling: an unknown, root or the service's own `task_user`, or a malformed pattern, raises
    ValueError at construction; a node monitor that may not switch to it raises PermissionError (one line)
    when it starts its workers. A task whose worker cannot start (its cluster user has no OS user under
    the pattern, or the switch is refused) fails with the reason; the node monitor goes on."""

    can_stop = True

    def __init__(
        self,
        slots: int,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        task_user: str | None = None,
        share_over: int = 0,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> None:
        super().__init__(slots)
        self.max_frame = max_frame
        self.output_cap = output_cap  # bytes of each of a task's stdout and stderr captured (0: not captured)
        # values over this many bytes cross as memory files (shared.py), not in frames (0: none do)
        self.share_over = share_over if shared.AVAILABLE else 0
        self._task_users = task_users(task_user)  # which OS user each worker runs as (task_users.py)
        self._starts = worker_starts(self._task_users)  # how a worker process starts (worker_starts.py)
        self.max_workers = slots + SPARE_WORKERS
        self._alive = 0  # workers started or starting, not retired nor ended
        self._starting: Counter[str | None] = Counter()  # workers starting (not ready yet), by the user they are for
        self.restarts = 0
        # called with the tasks handed ahead to a worker that died before they started (hand_ahead)
        self.returned: Callable[[list[Ticket]], None] | None = None
        self._workers: set[_Worker] = set()
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._all_ready = trio.Event()  # every slot's first worker said WorkerReady (start returns then)
        # held by the node monitor while it routes what it got, and by each worker's reader while it delivers a
        # read's outcomes: what is sent to the workers meanwhile leaves in one write per worker (burst.py)
        self.burst = Burst()
        self._out = _ToWorkers(self.burst)
        self._memory = memory_limits()  # holds a worker to its task's memory request (memory_limit.py)

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the worker processes (concurrently), keep `nursery` for their readers and restarts, and return
        once every slot's worker said it is ready."""
        self._nursery = nursery
        nursery.start_soon(self._memory.run)
        await self._starts.open(nursery)
        if self._task_users.per_user:  # each worker starts for its user's first task: none is fresh
            self._all_ready.set()
            return
        async with trio.open_nursery() as spawning:
            for _ in range(self.slots):
                self._count_starting(None)
                spawning.start_soon(self._spawn, None)
        await self._all_ready.wait()

    async def aclose(self) -> None:
        """Kill every worker process and reap it."""
        self._closed = True
        with trio.CancelScope(shield=True), trio.move_on_after(REAP_TIMEOUT):
            for worker in list(self._workers):
                await self._kill(worker)
        await self._starts.aclose()

    def _usable(self, worker: _Worker) -> bool:
        return worker.process.poll() is None  # one that died while idle is skipped: its reader replaces it

    def _hand(self, worker: _Worker, ticket: Ticket) -> None:
        """Send the task (the worker is its user's from now on); its inputs over `share_over` bytes cross as
        memory files on the side socket (one task at a time per worker: the worker takes them in the order of
        the frames)."""
        worker.user = ticket.user
        if ticket.memory:
            self._hold_memory(worker, ticket)
        payload, inputs = ticket.payload, ticket.inputs
        if inputs is None or worker.side is None:
            worker.send_task(TaskToWorker(payload, inputs), self._out)
            return
        files, indices, framed = [], [], []
        for i, value in enumerate(inputs):
            if type(value) is not shared.SharedValue and len(value) > self.share_over:
                # OSError: no memory file now (out of descriptors?), so the value goes in the frame
                with contextlib.suppress(OSError):
                    value = shared.share(value)  # a copy, but not through the socket and a frame
            if type(value) is shared.SharedValue:
                files.append(value)
                indices.append(i)
                value = b""
            framed.append(value)
        if files:
            try:
                socket.send_fds(worker.side, [b"\0"], [value.fd for value in files])
            except OSError as exc:  # gone, or it does not read its side socket: its reader fails the task
                worker.stopped = (SYSTEM, f"the task's inputs could not be handed to its worker: {exc}")
                _kill_group(worker.process)
                return
        worker.send_task(TaskToWorker(payload, framed, tuple(indices)), self._out)

    def _hold_memory(self, worker: _Worker, ticket: Ticket) -> None:
        """Hold `worker` to `ticket`'s memory request while it runs it; over it, the task is stopped (TOO_LARGE:
        not retried). A limit that cannot be set fails the task rather than run it unbounded."""
        try:
            self._memory.hold(worker.process.pid, ticket.memory, partial(self._stop_running, ticket, TOO_LARGE))
        except OSError as exc:
            worker.stopped = (SYSTEM, f"the task's memory limit could not be set: {exc}")
            _kill_group(worker.process)

    def _shared_outcome(self, worker: _Worker) -> Outcome:
        """The outcome of a task whose worker sent its value as a memory file (OutcomeToNode.shared)."""
        try:
            _, fds, flags, _ = socket.recv_fds(worker.side, 1, 1)  # type: ignore[arg-type]  # side is set
        except BlockingIOError:
            return failed("the task's result was to come as a memory file, but its worker sent none", SYSTEM)
        except OSError as exc:
            return failed(f"the task's result could not be taken from its worker: {exc}", SYSTEM)
        if len(fds) != 1 or flags & socket.MSG_CTRUNC:
            for fd in fds:
                os.close(fd)
            why = "out of file descriptors?" if flags & socket.MSG_CTRUNC else "none came"
            return failed(f"the task's result was to come as a memory file, but {why}", SYSTEM)
        try:
            value = shared.adopt(fds[0], self.max_frame)
        except (ValueError, OSError) as exc:
            return failed(f"the task's result is not a valid memory file: {exc}", SYSTEM)
        return Outcome(True, value)  # type: ignore[arg-type]  # a bytes-like map: kept by the store as it is

    async def _serve(self, worker: _Worker) -> None:
        """Deliver the worker's outcomes until its connection ends; then fail its task and replace it."""

        def on_messages(msgs: list) -> None:
            with self.burst:
                deliver(msgs)

        def deliver(msgs: list) -> None:
            for msg in msgs:
                kind = type(msg)
                if kind is not OutcomeToNode:
                    if kind is WorkerReady and not worker.ready:  # its first message: it takes tasks now
                        worker.ready = True
                        self._starting[worker.user] -= 1
                        self._idle.put(worker)
                        if sum(w.ready for w in self._workers) >= self.slots:
                            self._all_ready.set()
                        continue
                    if kind is OutputToNode and worker.ticket is not None:  # what it printed: its outcome follows
                        worker.ticket.output = msg.output
                        continue
                if worker.ticket is None or kind is not OutcomeToNode:
                    raise ProtocolError(f"executor sent {kind.__name__} when no OutcomeToNode was due")
                outcome = self._shared_outcome(worker) if msg.shared and worker.side is not None else msg.outcome
                if msg.dropped:
                    dropped = set(msg.dropped)
                    worker.queued = deque(t for t in worker.queued if t.seq not in dropped)
                if worker.stopped is not None:  # the kill is on its way: the task ends as stopped
                    worker.overran += 1  # and the next queued one had started
                    continue
                successor = worker.queued.popleft() if worker.queued else None
                if successor is not None and successor.withdrawn:  # it started before its DropTask came
                    worker.stopped = (CANCELLED, "withdrawn")  # nothing reports it: its caller gave it up
                    _kill_group(worker.process)
                if worker.ticket.memory:  # its worker is no longer held to it (a task handed ahead asks none)
                    self._memory.release(worker.process.pid)
                self._finished(worker, outcome, successor)
            self._dispatch()

        async with trio.open_nursery() as watching:
            watching.start_soon(self._end_reads_at_exit, worker)
            reason = await worker.conn.serve(on_messages)
            watching.cancel_scope.cancel()
        self._workers.discard(worker)
        self._idle.remove(worker)
        if not worker.ready:
            self._starting[worker.user] -= 1
        if not worker.retired:
            self._alive -= 1
        with trio.move_on_after(REAP_TIMEOUT):
            await worker.process.wait()
        ticket, worker.ticket = worker.ticket, None
        queued = list(worker.queued)
        worker.queued.clear()
        started = queued[: worker.overran] if ticket is not None else []  # answered after the kill began
        returned = [t for t in queued[len(started) :] if not t.withdrawn]
        if ticket is not None and ticket.done is None:  # given up: no outcome of it can start the next one
            returned[:0] = [t for t in started if not t.withdrawn]
            started = []
        if returned and self.returned is not None:  # never started: its caller hands them out again
            self.returned(returned)
        over = self._memory.release(worker.process.pid) if ticket is not None and ticket.memory else None
        if ticket is not None:
            if worker.stopped is not None:
                failure, why = worker.stopped
            elif over is not None:  # the kernel killed it at its cgroup's limit
                failure, why = TOO_LARGE, over
            else:
                failure = SYSTEM
                exited = describe_exit(worker.process.poll())
                why = f"executor process {worker.process.pid} died while running the task ({exited})"
                if worker.process.poll() is None:  # alive but broke the protocol
                    why += f": {reason}"
                logger.warning("%s; starting a replacement", why)
            for behind in started:  # each started as the one before it ended: a task that started fails once
                if behind.withdrawn:  # given up: nobody waits for it
                    continue
                ticket.successor = behind
                done, ticket.done = ticket.done, None
                if done is not None:
                    done(failed(why, failure))
                ticket = behind
                failure, why = SYSTEM, f"its worker (process {worker.process.pid}) was killed as it started the task"
            done, ticket.done = ticket.done, None
            if done is not None:  # else given up (withdrawn): nobody waits for it
                done(failed(why, failure))
        await self._kill(worker)
        if not self._closed and not worker.retired:
            self.restarts += 1
            if not self._task_users.per_user:  # else the next task of its user starts one
                self._count_starting(None)
                await self._spawn(None)
            elif not worker.ready:  # started for a waiting task of its user: that one fails, rather than wait
                exited = describe_exit(worker.process.poll())
                self._fail_waiting(
                    worker.user, f"its worker (process {worker.process.pid}) died as it started ({exited})"
                )

    def _count_starting(self, user: str | None) -> None:
        """A worker for `user` (None: fresh) is about to be started (`_spawn`)."""
        self._alive += 1
        self._starting[user] += 1

    def _short_of_workers(self) -> None:
        """Start a worker for each waiting task that a free slot could run but no idle worker may take and no
        starting one will; at `max_workers` alive, retire the one idle longest first (none idle: the tasks wait
        for one). Tasks past the free slots wait for a running one to end, as with a single user."""
        if self._closed or self._nursery is None:
            return
        free = self.slots - sum(worker.ticket is not None for worker in self._workers)
        if free <= 0:
            return
        fresh = self._starting[None]  # will take any user's task
        due = Counter(ticket.user for ticket in itertools.islice(self._waiting, free))
        for user, count in due.items():
            count -= self._starting[user]
            covered = min(max(count, 0), fresh)
            fresh -= covered
            for _ in range(count - covered):
                if self._alive >= self.max_workers:
                    oldest = self._idle.oldest()
                    if oldest is None:
                        return
                    self._retire(oldest)
                for_user = user if self._task_users.per_user else None
                self._count_starting(for_user)
                self._nursery.start_soon(self._spawn_for_waiting, for_user)

    def _retire(self, worker: _Worker) -> None:
        """Kill an idle worker to make room for another (its reader reaps it; nothing replaces it)."""
        self._idle.remove(worker)
        worker.retired = True
        self._alive -= 1
        _kill_group(worker.process)

    async def _spawn_for_waiting(self, user: str | None) -> None:
        """`_spawn` for a task that waits; if the worker cannot start, that task fails (it would wait forever)."""
        try:
            await self._spawn(user)
        except (OSError, ValueError) as exc:  # ValueError: its user has no task user (task_users.py)
            self._fail_waiting(user, str(exc))

    def _fail_waiting(self, user: str | None, why: str) -> None:
        """The first waiting task of `user` (None: any) fails: no worker could be started for it."""
        reason = f"no worker could be started for the task: {why}"
        logger.warning("%s", reason)
        for ticket in self._waiting:
            if user is None or ticket.user == user:
                self.stop(ticket, SYSTEM, reason)
                return

    @staticmethod
    async def _end_reads_at_exit(worker: _Worker) -> None:
        """Once the worker process exits, end its connection: the reader takes the outcomes it sent
        before dying, then sees end of file, even if a process its task forked still holds the socket."""
        await worker.process.wait()
        stream = worker.conn.stream
        assert isinstance(stream, trio.SocketStream)  # over the socket pair of _spawn
        with contextlib.suppress(OSError):  # already closed
            stream.socket.shutdown(socket.SHUT_RD)

    async def _spawn(self, user: str | None) -> None:
        """Start a worker process for `user` (None: fresh, for any user), its reader task, and put it to work
        (counted by `_count_starting` before). Raises ValueError if `user` has no task user (task_users.py)."""
        try:
            as_user = self._task_users.options(user)
        except ValueError:
            self._not_started(user)
            raise
        parent, child = socket.socketpair()
        side, child_side = socket.socketpair() if self.share_over else (None, None)
        if side is not None:
            side.setblocking(False)  # a worker that sends no memory file never blocks the loop
        args: list[str | socket.socket] = [child, str(self.max_frame), str(self.output_cap)]  # worker_main's
        if child_side is not None:
            args += [child_side, str(self.share_over)]
        try:
            process = await self._starts.start(args, as_user)
        except PermissionError as exc:
            parent.close()
            _close(side)
            self._not_started(user)
            if not as_user:
                raise
            raise PermissionError(
                f"cannot start an executor as task user {as_user['name']}: {exc.strerror or exc} (a node monitor "
                f"needs to run as root, or with CAP_SETUID, CAP_SETGID and CAP_KILL, to run tasks as another user)"
            ) from None
        except BaseException:
            parent.close()
            _close(side)
            self._not_started(user)
            raise
        finally:
            child.close()
            _close(child_side)
        if self._closed:  # aclose ran while the process started (a replacement): it must not outlive the pool
            self._not_started(user)
            parent.close()
            _close(side)
            _kill_group(process)
            with trio.CancelScope(shield=True), trio.move_on_after(REAP_TIMEOUT):
                await process.wait()
            return
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(parent))
        conn = Connection(stream, max_frame=self.max_frame, peer_name=f"executor {process.pid}", handshake=False)
        worker = _Worker(process, conn, side, user)
        self._workers.add(worker)
        assert self._nursery is not None, "start() first"
        self._nursery.start_soon(self._serve, worker)  # idle once it says WorkerReady (it has imported by then)

    def _not_started(self, user: str | None) -> None:
        self._alive -= 1
        self._starting[user] -= 1

    def hand_ahead(self, payload: bytes, tag: Hashable, user: str = "") -> Ticket | None:
        """Queue a task of `user` in a busy worker of that user (the one with the fewest queued), to start as
        the ones before it end with no hop through the node monitor between them; None (nothing sent) if a
        worker that may take it is idle, or none of that user's runs a task. Its ticket has no callback until
        `adopt`: when the task before it ends, that one's ticket names it as its `successor` (it runs now). If
        the worker dies first, it never started: `returned` gets it back."""
        if self._waiting or self._idle.can_serve(user):
            return None
        best: _Worker | None = None
        for worker in self._workers:
            if (
                worker.user == user
                and worker.ticket is not None
                and worker.stopped is None
                and not worker.ticket.withdrawn
                and (best is None or len(worker.queued) < len(best.queued))
            ):
                best = worker
        if best is None:
            return None
        ticket = Ticket(payload, None, None, user)
        ticket.tag, ticket.worker = tag, best
        ticket.seq = best.send_task(TaskToWorker(payload), self._out)
        best.queued.append(ticket)
        return ticket

    @staticmethod
    def adopt(ticket: Ticket, done: Done) -> Ticket:
        """A task handed ahead has started (a finished ticket's successor): `done` gets its outcome (at once if it
        has ended already: its caller may report the outcomes of a worker's read after the read)."""
        ended = ticket.ended
        if ended is None:
            ticket.done = done
        else:
            ticket.ended = None
            done(ended)
        return ticket

    def withdraw(self, ticket: Ticket) -> None:
        """Give up a task handed ahead (no outcome will be reported for it): dropped unstarted if its worker
        has not started it, else its worker is killed (as a forced cancel kills a running task)."""
        worker = ticket.worker
        if ticket.withdrawn or not isinstance(worker, _Worker):
            return
        ticket.withdrawn = True
        ticket.done = None
        if worker.ticket is ticket:  # it had started
            if worker.stopped is None:
                worker.stopped = (CANCELLED, "withdrawn")
                _kill_group(worker.process)
        elif ticket in worker.queued:
            self._out.send(worker, DropTask(ticket.seq))  # after the task, if that waits in the batch

    def _stop_running(self, ticket: Ticket, failure: int, reason: str) -> bool:
        """Kill the worker running `ticket`'s task; its reader reports (failure, reason) and replaces it."""
        worker = ticket.worker
        if not isinstance(worker, _Worker) or worker.ticket is not ticket or worker.stopped is not None:
            return False
        worker.stopped = (failure, reason)
        _kill_group(worker.process)
        return True

    async def _kill(self, worker: _Worker) -> None:
        """Kill the worker and whatever its task started (its process group), and reap it."""
        self._workers.discard(worker)
        _kill_group(worker.process)
        await worker.conn.aclose()
        _close(worker.side)
        with trio.move_on_after(REAP_TIMEOUT):
            await worker.process.wait()
        self._memory.forget(worker.process.pid)


def _close(sock: socket.socket | None) -> None:
    if sock is not None:
        sock.close()


def _kill_group(process: WorkerProcess) -> None:
    """SIGKILL a worker's process group: the worker and whatever its task started."""
    # the group outlives a reaped leader while a member lives, so its id is not reused meanwhile
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left of it
        os.killpg(process.pid, signal.SIGKILL)
