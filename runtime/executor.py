"""Executors: where a node monitor runs the tasks it launched.

Both have the same small interface: `await start(nursery)`, `await run(payload) -> (ok, payload, error)`
(never raises for a task's failure), `await aclose()`. The node monitor never runs more tasks at once
than it has slots, and each executor has exactly that many workers.

- ProcessExecutor (default): one worker process per slot (worker_main.py), each over a private Unix
  socket pair. A worker that dies mid-task makes that task fail with the reason (exit status or
  signal) and is replaced by a fresh process in the background; the slot is never lost.
- ThreadExecutor: tasks run in threads of the node monitor's process (tests and benchmarks): cheap,
  but a task that crashes the interpreter takes the node monitor with it.
"""

from __future__ import annotations

import logging
import math
import socket
import subprocess
import sys

import trio

from .connection import Connection
from .errors import ConnectionLost, ProtocolError
from .framing import DEFAULT_MAX_FRAME
from .messages import ExecutorResult, LaunchTask
from .processes import child_env, describe_exit
from .task_codec import run_task

logger = logging.getLogger("sparrow_runtime.executor")

REAP_TIMEOUT = 2.0  # how long a dead or killed worker may take to be reaped


class ThreadExecutor:
    """Runs each task in a worker thread of this process, `slots` at a time."""

    def __init__(self, slots: int) -> None:
        self._limiter = trio.CapacityLimiter(slots)

    async def start(self, nursery: trio.Nursery) -> None:
        pass

    async def run(self, payload: bytes) -> tuple[bool, bytes, str]:
        return await trio.to_thread.run_sync(run_task, payload, limiter=self._limiter, abandon_on_cancel=True)

    async def aclose(self) -> None:
        pass


class _Worker:
    __slots__ = ("process", "conn")

    def __init__(self, process: trio.Process, conn: Connection) -> None:
        self.process = process
        self.conn = conn


class ProcessExecutor:
    """One worker process per slot; a dead worker fails its task and is replaced."""

    def __init__(self, slots: int, *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.slots = slots
        self.max_frame = max_frame
        self.restarts = 0
        self._workers: set[_Worker] = set()
        self._idle_send, self._idle_receive = trio.open_memory_channel(math.inf)
        self._nursery: trio.Nursery | None = None

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the worker processes (concurrently) and keep `nursery` for restarts."""
        self._nursery = nursery
        async with trio.open_nursery() as spawning:
            for _ in range(self.slots):
                spawning.start_soon(self._spawn_idle)

    async def run(self, payload: bytes) -> tuple[bool, bytes, str]:
        worker = await self._idle_receive.receive()
        try:
            if worker.process.poll() is not None:  # died while idle: replace it before use
                await self._kill(worker)
                self.restarts += 1
                worker = await self._spawn()
            await worker.conn.send_now([LaunchTask(payload)])
            msg = await worker.conn.receive_one()
            if not isinstance(msg, ExecutorResult):
                raise ProtocolError(f"executor sent {type(msg).__name__} instead of ExecutorResult")
        except (ConnectionLost, ProtocolError) as exc:
            self._discard(worker)
            with trio.move_on_after(REAP_TIMEOUT):
                await worker.process.wait()
            how = describe_exit(worker.process.poll())
            reason = f"executor process {worker.process.pid} died while running the task ({how})"
            if not isinstance(exc, ConnectionLost):
                reason += f": {exc}"
            logger.warning("%s; starting a replacement", reason)
            self._nursery.start_soon(self._replace, worker)
            return False, b"", reason
        except BaseException:  # cancelled mid-task: the worker's state is unknown, replace it
            self._discard(worker)
            self._nursery.start_soon(self._replace, worker)
            raise
        self._idle_send.send_nowait(worker)
        return msg.ok, msg.payload, msg.error

    async def aclose(self) -> None:
        """Kill every worker process and reap it."""
        with trio.CancelScope(shield=True), trio.move_on_after(REAP_TIMEOUT):
            for worker in list(self._workers):
                await self._kill(worker)

    async def _spawn(self) -> _Worker:
        parent, child = socket.socketpair()
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "sparrow_runtime.worker_main", str(child.fileno()), str(self.max_frame)],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=2,  # a task's prints go to the node monitor's stderr, never its stdout
                env=child_env(),
            )
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(parent))
        worker = _Worker(process, Connection(stream, max_frame=self.max_frame, peer_name=f"executor {process.pid}"))
        self._workers.add(worker)
        return worker

    async def _spawn_idle(self) -> None:
        self._idle_send.send_nowait(await self._spawn())

    async def _replace(self, dead: _Worker) -> None:
        await self._kill(dead)
        self.restarts += 1
        await self._spawn_idle()

    def _discard(self, worker: _Worker) -> None:
        self._workers.discard(worker)

    async def _kill(self, worker: _Worker) -> None:
        self._workers.discard(worker)
        if worker.process.poll() is None:
            worker.process.kill()
        await worker.conn.aclose()
        with trio.move_on_after(REAP_TIMEOUT):
            await worker.process.wait()
