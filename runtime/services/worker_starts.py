"""How a process executor starts a worker process: one policy object per executor (worker_pool.py).

A worker serves one user (idle_workers.py), so a node monitor whose users take turns starts a worker for each
user that has none idle: the start is on the path of that user's first task. The interface: `await
open(nursery)` once, before any start; `await start(args, as_user)`, which starts worker_main with the
arguments `args` (a socket among them stands for its descriptor, which the worker gets) as the OS user
`as_user` names (the options of task_users.py; {} for the service's own user) and returns its process
(`pid`, `returncode`, `poll()`, `await wait()`: a trio.Process or a ForkedProcess); `await aclose()` once
its workers are gone.

- SpawnStarts: a new interpreter per worker (`python -m ...worker_main`), switched to its OS user by
  subprocess before it runs. It pays an interpreter's start and the imports of the runtime, msgspec and
  cloudpickle each time: about 70 ms of CPU per worker (docs/results/).
- ForkStarts (Linux): a fork server (worker_zygote.py) imports them once, and forks each worker from that
  state: about 1 ms. A forked worker is as fresh as a spawned one (the server holds no user's data, and the
  child drops every descriptor of the server's before it switches user and runs worker_main), is in a
  session of its own, and is non-dumpable; it is not the node monitor's child but the server's, which reaps
  it and reports its exit status. If the server dies, the workers it forked are killed (their tasks fail
  once, saying so) and this policy starts every later worker as SpawnStarts does; a server that does not
  answer a request within REQUEST_TIMEOUT is killed as stuck, the same way.

`worker_starts(task_users)` picks ForkStarts where it can switch users as subprocess would (no task user, or
a node monitor running as root: a server started without root could not switch its children), else
SpawnStarts.
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from typing import Protocol

import trio

from .processes import child_env
from .task_users import TaskUsers

logger = logging.getLogger(__name__)

SERVER_START_TIMEOUT = 60.0  # seconds the fork server may take to import and say it is ready
MAX_REPLY = 4096  # bytes of one message from the fork server
REAP_TIMEOUT = 2.0  # how long the killed fork server may take to be reaped
REQUEST_TIMEOUT = 10.0  # how long the fork server may take to fork a worker; past it, it is ended as stuck


class WorkerProcess(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    async def wait(self) -> int: ...


class SpawnStarts:
    """A new interpreter per worker (module docstring)."""

    async def open(self, nursery: trio.Nursery) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def start(self, args: list[str | socket.socket], as_user: dict) -> WorkerProcess:
        fds = [arg.fileno() for arg in args if isinstance(arg, socket.socket)]
        argv = [str(arg.fileno()) if isinstance(arg, socket.socket) else arg for arg in args]
        return await trio.lowlevel.open_process(
            [sys.executable, "-m", "sparrow_runtime.services.worker_main", *argv],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=2,  # a task's prints not captured go to the node monitor's stderr, never its stdout
            env=child_env(as_user.get("env")),
            start_new_session=True,  # its own process group: killed whole, and no terminal signals
            **as_user.get("popen", {}),
        )


class ForkedProcess:
    """A worker the fork server forked: its pid, and its exit status once the server reported it."""

    __slots__ = ("_ended", "pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = trio.Event()

    def poll(self) -> int | None:
        return self.returncode

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None  # set with _ended
        return self.returncode

    def ended(self, status: int) -> None:
        if self.returncode is None:
            self.returncode = status
            self._ended.set()


class ForkStarts:
    """Workers forked by a fork server (module docstring)."""

    def __init__(self) -> None:
        self._server: trio.Process | None = None
        self._line: trio.socket.SocketType | None = None
        self._forked: dict[int, ForkedProcess] = {}
        self._lock = trio.Lock()  # one request at a time: its reply is the next that is not an exit
        self._replies: trio.MemorySendChannel[dict] | None = None
        self._replied: trio.MemoryReceiveChannel[dict] | None = None
        self._spawn = SpawnStarts()
        self._broken = False  # the server is gone: every later worker is spawned

    async def open(self, nursery: trio.Nursery) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._server = await trio.lowlevel.open_process(
                [sys.executable, "-m", "sparrow_runtime.services.worker_zygote", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=2,
                env=child_env(),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._line = trio.socket.from_stdlib_socket(ours)
        self._replies, self._replied = trio.open_memory_channel(1)
        with trio.fail_after(SERVER_START_TIMEOUT):
            ready = json.loads(await self._line.recv(MAX_REPLY) or b"{}")
        if not ready.get("ready"):
            raise OSError("the executor's fork server did not start")
        nursery.start_soon(self._read)

    async def aclose(self) -> None:
        """End the server and reap it (the workers it forked are killed: close their pool first)."""
        self._broken = True
        if self._line is not None:
            self._line.close()
        if self._server is not None:
            with _gone():
                os.killpg(self._server.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True), trio.move_on_after(REAP_TIMEOUT):
                await self._server.wait()

    async def start(self, args: list[str | socket.socket], as_user: dict) -> WorkerProcess:
        if self._broken or self._line is None:
            return await self._spawn.start(args, as_user)
        popen = as_user.get("popen")
        request = {
            "args": [None if isinstance(arg, socket.socket) else arg for arg in args],
            "user": None if not popen else {"name": as_user["name"], "uid": popen["user"], "gid": popen["group"]},
            "env": as_user.get("env") or {},
        }
        fds = [arg.fileno() for arg in args if isinstance(arg, socket.socket)]
        reply = None
        async with self._lock:
            assert self._replied is not None
            # never cancelled halfway: a reply left unread would answer the next request
            with trio.CancelScope(shield=True, deadline=trio.current_time() + REQUEST_TIMEOUT) as exchange:
                try:
                    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())
                    await self._line.sendmsg([json.dumps(request).encode()], [rights])
                    reply = await self._replied.receive()
                except (OSError, trio.EndOfChannel, trio.ClosedResourceError):  # the server died meanwhile
                    pass
            if exchange.cancelled_caught and self._server is not None:  # stuck: it is ended (_read then sees it)
                with _gone():
                    os.killpg(self._server.pid, signal.SIGKILL)
        if reply is None:
            return await self._spawn.start(args, as_user)
        if "error" in reply:
            raise PermissionError(reply["error"])
        return reply["process"]

    async def _read(self) -> None:
        """Take the server's replies and exit reports until its line ends; then kill what it forked. Cancelled
        (the node monitor is stopping), it kills what it forked too, and says nothing: the server did not fail."""
        assert self._line is not None and self._replies is not None
        try:
            while True:
                data = await self._line.recv(MAX_REPLY)
                if not data:
                    break
                msg = json.loads(data)
                if "exit" in msg:
                    process = self._forked.pop(msg["exit"], None)
                    if process is not None:
                        process.ended(msg["status"])
                    continue
                if "pid" in msg:  # known before its exit report can come, however soon it ends
                    msg["process"] = self._forked[msg["pid"]] = ForkedProcess(msg["pid"])
                await self._replies.send(msg)
        except (OSError, trio.ClosedResourceError):
            pass
        except trio.Cancelled:
            self._broken = True
            raise
        finally:
            self._server_gone()

    def _server_gone(self) -> None:
        if not self._broken:  # the line ended while the node monitor still runs
            logger.warning("the executor's fork server ended: its workers are killed, later workers are spawned")
        self._broken = True
        assert self._replies is not None
        self._replies.close()
        for pid, process in self._forked.items():  # orphans now: nobody reports their end but us
            with _gone():
                os.killpg(pid, signal.SIGKILL)
            process.ended(-signal.SIGKILL)
        self._forked.clear()


def _gone() -> contextlib.suppress:
    """Signalling a process that is already gone is no error."""
    return contextlib.suppress(ProcessLookupError, PermissionError)


WorkerStarts = SpawnStarts | ForkStarts


def worker_starts(task_users: TaskUsers) -> WorkerStarts:
    """ForkStarts where it can do what SpawnStarts does (Linux; no task user, or running as root), else
    SpawnStarts."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return SpawnStarts()
    if task_users.spec is not None and os.geteuid() != 0:
        return SpawnStarts()
    return ForkStarts()
