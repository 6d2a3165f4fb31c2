"""LinkConfig: how one service (or client) makes its links, as one frozen object: its credentials (the
cluster secret, or TLS), the handshake's deadline and the largest frame it accepts.

A service takes it whole and hands it to every handshake, connection and data link it opens, so a
new link setting touches this class and the one place that reads it, not every signature on the way.

Error handling: a bad value raises ValueError at construction, naming the field.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .auth import load_secret
from .framing import DEFAULT_MAX_FRAME, check_max_frame
from .tls import TLS

DEFAULT_HANDSHAKE_TIMEOUT = 5.0  # seconds a peer has to finish the handshake


@dataclass(frozen=True)
class LinkConfig:
    """`tls`: every link is TLS with the cluster CA and peers are who their certificates say; else
    `secret` (str or bytes, kept as bytes): the insecure shared-secret mode, for one trusted host.
    Neither: `resolved()` reads the secret from the environment (auth.load_secret) when the service
    starts. `handshake_timeout`: seconds a peer has to finish the handshake. `max_frame`: the
    largest frame accepted, in bytes (each side tells its own; a link takes the smaller)."""

    secret: bytes | None = None
    tls: TLS | None = None
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    max_frame: int = DEFAULT_MAX_FRAME

    def __post_init__(self) -> None:
        if isinstance(self.secret, str):
            object.__setattr__(self, "secret", self.secret.encode())
        if self.secret is not None and not isinstance(self.secret, bytes):
            raise ValueError(f"secret must be str or bytes, got {type(self.secret).__name__}")
        if self.secret is not None and self.tls is not None:
            raise ValueError("a link is TLS or shares a secret: give tls or secret, not both")
        if self.tls is not None and not isinstance(self.tls, TLS):
            raise ValueError(f"tls must be a TLS (tls.load_tls), got {type(self.tls).__name__}")
        if isinstance(self.handshake_timeout, bool) or not 0 < self.handshake_timeout < math.inf:
            raise ValueError(f"handshake_timeout must be a number of seconds > 0, got {self.handshake_timeout!r}")
        check_max_frame(self.max_frame)

    def __repr__(self) -> str:  # never the secret
        mode = "tls" if self.tls is not None else "secret" if self.secret is not None else "secret from the environment"
        return f"LinkConfig({mode}, handshake_timeout={self.handshake_timeout:g}, max_frame={self.max_frame})"

    def resolved(self) -> LinkConfig:
        """This config with its secret read from the environment (SPARROW_SECRET, SPARROW_SECRET_FILE)
        if it has neither a secret nor TLS; ValueError if none is set there either."""
        if self.tls is not None or self.secret is not None:
            return self
        return dataclasses.replace(self, secret=load_secret())
