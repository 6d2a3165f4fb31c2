"""The cluster secret and the HMAC proofs of the handshake (pure functions, no I/O but reading a file).

A secret file must be private to its owner (mode 0600 or stricter), as ssh requires of a private key.

Both sides prove they know the secret: the client MACs the server's fresh nonce, the server MACs the
client's. Each MAC also covers the protocol version, the direction and both roles and ids, so a proof
cannot be replayed on another connection or turned around. The secret itself never leaves the process
and is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat

NONCE_SIZE = 32
SECRET_ENV = "SPARROW_SECRET"
SECRET_FILE_ENV = "SPARROW_SECRET_FILE"


def load_secret(secret: str | bytes | None = None, secret_file: str | os.PathLike | None = None) -> bytes:
    """The cluster secret: `secret` if given, else the contents of `secret_file`, else the
    SPARROW_SECRET environment variable, else the file named by SPARROW_SECRET_FILE.

    Error handling: raises ValueError naming where it looked when there is no secret or it is empty,
    or naming the file when group or others may read it (see read_secret_file); OSError when the file
    cannot be read.
    """
    if secret is None and secret_file is None:
        secret = os.environ.get(SECRET_ENV)
        if secret is None:
            secret_file = os.environ.get(SECRET_FILE_ENV)
    if secret is None and secret_file is not None:
        secret = read_secret_file(secret_file)
    if secret is None:
        raise ValueError(f"no cluster secret: pass secret= or secret_file=, or set {SECRET_ENV} or {SECRET_FILE_ENV}")
    if isinstance(secret, str):
        secret = secret.encode()
    if not isinstance(secret, bytes):
        raise TypeError(f"secret must be str or bytes, got {type(secret).__name__}")
    if not secret:
        raise ValueError("secret must not be empty")
    return secret


def read_secret_file(path: str | os.PathLike) -> bytes:
    """The secret held in the file at `path`, which only its owner may access, as ssh requires of a
    private key: a file with any permission for group or others is refused (ValueError, with the
    command that fixes it), and so is an empty one."""
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        problem = too_open(os.fspath(path), info)
        if problem is not None:
            raise ValueError(problem)
        secret = f.read().strip()
    if not secret:
        raise ValueError(f"secret file {os.fspath(path)!r} is empty")
    return secret


def too_open(path: str, info: os.stat_result, what: str = "secret file") -> str | None:
    """Why a private file (`what`: a secret file, a key) with `info` may not be used, and the command
    that fixes it; None if only its owner may access it (or the system has no such modes)."""
    if os.name != "posix" or not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o077:
        return None
    fix = f"chmod 600 {path}"
    if info.st_uid != os.getuid():  # it must also become the reader's, or it could not read it after chmod
        fix = f"chown {_user_name(os.getuid())} {path} && {fix}"
    mode = stat.S_IMODE(info.st_mode)
    return f"{what} {path} has mode {mode:04o}: group and others must have no access to it; fix it with: {fix}"


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def new_secret() -> str:
    """A fresh random secret (for a local cluster)."""
    return secrets.token_urlsafe(32)


def new_nonce() -> bytes:
    return os.urandom(NONCE_SIZE)


def proof(secret: bytes, direction: str, nonce: bytes, version: int, *identities: str) -> bytes:
    """HMAC-SHA256 of `nonce` bound to the direction ("client"/"server"), version and identities."""
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    mac.update(f"sparrow/{version}/{direction}\0".encode())
    for ident in identities:
        mac.update(ident.encode() + b"\0")
    mac.update(nonce)
    return mac.digest()


def verify(expected: bytes, got: bytes) -> bool:
    return hmac.compare_digest(expected, got)
