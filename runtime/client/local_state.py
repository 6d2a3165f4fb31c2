"""Where a running `sparrow local` tells `sparrow submit` and `sparrow status` how to reach it.

The state directory is `$XDG_RUNTIME_DIR/sparrow` (else `~/.cache/sparrow`), mode 0700. It holds
`local.json` (the pid of `sparrow local`, scheduler and node monitor addresses, the path of the
secret file and, on TLS, of the client's CA, certificate and key) and `local.secret`, both mode 0600;
on TLS, the cluster's CA and certificates are in its `tls/` folder (mode 0700, keys 0600), made once
and kept across runs. `sparrow local` writes them once its cluster is
up and removes them when it stops; a state whose pid is no longer running is stale.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..wire.tls import TLS

STATE_NAME = "local.json"
SECRET_NAME = "local.secret"


@dataclass(frozen=True)
class LocalState:
    pid: int
    schedulers: list[str]
    node_monitors: list[str]
    secret_file: str
    path: Path
    tls_files: tuple[str, str, str] | None = None  # the client's (CA, certificate, key) on TLS

    def tls(self) -> TLS | None:
        """The client credentials of this cluster, None if it runs --insecure."""
        return None if self.tls_files is None else TLS(*self.tls_files)

    def alive(self) -> bool:
        """Whether the `sparrow local` that wrote this state is still running."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def state_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime else Path.home() / ".cache"
    return base / "sparrow"


def read_state() -> LocalState | None:
    """The state of a `sparrow local`, or None if there is none.

    Error handling: a file that is not a state this module wrote raises ValueError naming it.
    """
    path = state_dir() / STATE_NAME
    try:
        data = json.loads(path.read_text())
        tls = data.get("tls")
        return LocalState(
            int(data["pid"]),
            list(data["schedulers"]),
            list(data["node_monitors"]),
            str(data["secret_file"]),
            path,
            None if tls is None else (str(tls["ca"]), str(tls["cert"]), str(tls["key"])),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"unreadable local cluster state {path}: {exc}") from None


def write_state(
    schedulers: list[str], node_monitors: list[str], secret: str, tls_files: tuple[str, str, str] | None = None
) -> LocalState:
    """Write the secret and the state of this process's cluster (owner-only permissions); `tls_files`:
    the client's (CA, certificate, key) when it runs on TLS."""
    directory = state_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)  # also when an older version (or certs.py, making tls/ in it) made it 0755
    secret_path = directory / SECRET_NAME
    _write_private(secret_path, secret + "\n")
    state = LocalState(os.getpid(), schedulers, node_monitors, str(secret_path), directory / STATE_NAME, tls_files)
    record = {
        "pid": state.pid,
        "schedulers": schedulers,
        "node_monitors": node_monitors,
        "secret_file": state.secret_file,
    }
    if tls_files is not None:
        record["tls"] = dict(zip(("ca", "cert", "key"), tls_files, strict=True))
    _write_private(state.path, json.dumps(record, indent=1) + "\n")
    return state


def remove_state(state: LocalState) -> None:
    """Remove the state and secret files, if they are still this state's."""
    try:
        current = read_state()
    except ValueError:
        return
    if current is not None and current.pid == state.pid:
        state.path.unlink(missing_ok=True)
        Path(state.secret_file).unlink(missing_ok=True)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def running_local_cluster() -> LocalState:
    """The state of the `sparrow local` running on this host.

    Error handling: LookupError saying how to start one when none runs (or the recorded one is gone);
    ValueError for an unreadable state file.
    """
    state = read_state()
    if state is None or not state.alive():
        stale = "" if state is None else f" (the one recorded in {state.path}, pid {state.pid}, is not running)"
        raise LookupError(f"no `sparrow local` is running on this host{stale}: start one with `sparrow local`")
    return state
