"""The cluster secret and the HMAC proofs of the handshake (pure functions, no I/O but reading a file).

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

NONCE_SIZE = 32
SECRET_ENV = "SPARROW_SECRET"
SECRET_FILE_ENV = "SPARROW_SECRET_FILE"


def load_secret(secret: str | bytes | None = None, secret_file: str | os.PathLike | None = None) -> bytes:
    """The cluster secret: `secret` if given, else the contents of `secret_file`, else the
    SPARROW_SECRET environment variable, else the file named by SPARROW_SECRET_FILE.

    Error handling: raises ValueError naming where it looked when there is no secret or it is empty.
    """
    if secret is None and secret_file is None:
        secret = os.environ.get(SECRET_ENV)
        if secret is None:
            secret_file = os.environ.get(SECRET_FILE_ENV)
    if secret is None and secret_file is not None:
        with open(secret_file, "rb") as f:
            secret = f.read().strip()
        if not secret:
            raise ValueError(f"secret_file {os.fspath(secret_file)!r} is empty")
    if secret is None:
        raise ValueError(
            f"no cluster secret: pass secret= or secret_file=, or set {SECRET_ENV} or {SECRET_FILE_ENV}"
        )
    if isinstance(secret, str):
        secret = secret.encode()
    if not isinstance(secret, bytes):
        raise TypeError(f"secret must be str or bytes, got {type(secret).__name__}")
    if not secret:
        raise ValueError("secret must not be empty")
    return secret


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
