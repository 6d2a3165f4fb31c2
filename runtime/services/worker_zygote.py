"""A node monitor's fork server: a process that has imported what a worker needs and forks each new worker.

Started by worker_starts.ForkStarts as `python -m sparrow_runtime.services.worker_zygote FD`, FD being its end
of a private SOCK_SEQPACKET socket pair, as the node monitor's own user. It imports worker_main (and with it
msgspec, cloudpickle and the runtime's wire), makes itself non-dumpable, and answers `ready`. Then, per
request (a JSON object: `args`, worker_main's arguments, None where a descriptor goes; `user`, None or the
OS user's `name`, `uid` and `gid`; `env`; the descriptors come with it as SCM_RIGHTS, in order), it forks a
child that:

1. starts a session of its own (its process group is the worker's: killed whole),
2. closes every descriptor but stdin/stdout/stderr and its two sockets (this server's line above all: a
   task must never ask it for a worker of another user),
3. switches to the request's OS user, if any (no extra groups, then the group, then the user, real, effective
   and saved alike; a switch that does not hold ends the child), and sets HOME, USER and LOGNAME,
4. says so over a pipe to this server, and runs worker_main.main (as `__main__`, as a spawned worker does).

This server answers `{"pid": N}` once the child got past step 3, or `{"error": why}`; it reaps its children
and reports each one's end as `{"exit": N, "status": S}` (S as subprocess's returncode: -signal if killed).

What a forked worker shares with the others: only what this server held when it forked, which is no user's
data (it runs no task, unpickles nothing, and takes only descriptors and the names of OS users). The hash seed
and the addresses of the loaded code are this server's in every worker it forks (a spawned worker draws its
own); `random` is re-seeded in each child by the standard library. It exits when the node monitor closes its
line; its children have their own (worker_main.py) and die with the node monitor, not with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

from . import worker_main

MAX_REQUEST = 64 * 1024  # bytes of one request (its JSON)
MAX_FDS = 8  # descriptors that may come with one request
HANGUP = select.POLLHUP | select.POLLERR


def serve(control: socket.socket) -> None:
    """Fork a worker per request until the node monitor closes `control`; report each child's end."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # a handler, so SIGCHLD writes to the wake pipe
    poller = select.poll()
    poller.register(control, select.POLLIN | HANGUP)
    poller.register(wake_r, select.POLLIN)
    control.send(b'{"ready": true}')
    while True:
        for fd, _ in poller.poll():
            if fd == wake_r:
                while _drain(wake_r):
                    pass
                _report_ended(control)
                continue
            data, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, MAX_FDS)
            if not data:
                return  # the node monitor is gone
            try:
                reply = _fork(json.loads(data), fds, control, (wake_r, wake_w))
            finally:
                for received in fds:
                    os.close(received)
            control.send(json.dumps(reply).encode())
        _report_ended(control)  # a child that ended while this one forked


def _drain(fd: int) -> bool:
    try:
        return bool(os.read(fd, 4096))
    except BlockingIOError:
        return False


def _report_ended(control: socket.socket) -> None:
    """Reap every child that ended and tell the node monitor how."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        control.send(json.dumps({"exit": pid, "status": os.waitstatus_to_exitcode(status)}).encode())


def _fork(request: dict, fds: list[int], control: socket.socket, own: tuple[int, int]) -> dict:
    """Fork the worker `request` asks for; the reply for the node monitor."""
    if len(fds) != request["args"].count(None):
        return {"error": f"{len(fds)} descriptors came for {request['args'].count(None)} in the arguments"}
    said, say = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # the worker: nothing of this server's may outlive this block but its code
        code = 1
        try:
            os.close(said)
            code = _become_worker(request, fds, say, control, own)
        finally:
            os._exit(code)
    os.close(say)
    with os.fdopen(said, "rb") as pipe:
        why = pipe.read().decode(errors="replace")
    if why != "ok":
        return {"error": why or "the worker died before it started"}
    return {"pid": pid}


def _become_worker(request: dict, fds: list[int], say: int, control: socket.socket, own: tuple[int, int]) -> int:
    """In the child: steps 1-4 of the module docstring, then the worker's loop; its exit status."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.close()
    for fd in own:
        os.close(fd)
    keep = {0, 1, 2, say, *fds}
    for name in os.listdir("/proc/self/fd"):  # what else the interpreter holds open, if anything
        if int(name) not in keep:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.close(int(name))
    try:
        _switch_user(request.get("user"))
    except OSError as exc:
        os.write(say, str(exc.strerror or exc).encode())
        return 1
    os.environ.update(request.get("env") or {})
    os.write(say, b"ok")
    os.close(say)
    given = iter(fds)
    argv = [str(next(given)) if arg is None else arg for arg in request["args"]]
    sys.modules["__main__"] = worker_main
    sys.argv = ["worker_main", *argv]
    return worker_main.main(argv)


def _switch_user(user: dict | None) -> None:
    """Become the OS user `user` names (uid, gid): no other group, real, effective and saved ids alike.
    Raises OSError if not allowed, or if the switch did not hold (root could be taken back)."""
    if user is None:
        return
    uid, gid = user["uid"], user["gid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups() not in ([], [gid]):
        raise OSError(f"the switch to uid {uid}, gid {gid} did not hold")
    if uid != 0:
        try:
            os.setuid(0)
        except PermissionError:
            return
        raise OSError(f"uid {uid} could take root back")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sparrow_runtime.services.worker_zygote FD", file=sys.stderr)
        return 2
    worker_main.stay_private()  # inherited by every child until it runs something else
    with socket.socket(fileno=int(argv[0])) as control:
        os.set_inheritable(control.fileno(), False)
        # the node monitor closing the line with our last reports unread: it is gone, so are we
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            serve(control)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
