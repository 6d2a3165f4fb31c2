"""TLS on every link: the cluster's SSL contexts (stdlib `ssl`, run by tls_channel.TLSChannel under each
Connection) and who a peer's certificate says it is.

Every peer holds a key and a certificate signed by the cluster CA (`sparrow certs`, certs.py) and
checks the other's against that CA: mutual authentication, TLS 1.2 or later. A certificate names its
holder (subject CN), its role (subject OU: scheduler, node-monitor, client, admin or monitor) and, for
a client or an admin, its user (subject UID). A monitor certificate (Prometheus, an operator's
browser) connects to no service's port: it only reads metrics and dashboards (METRICS_READERS,
services/http_server.py), which an admin's may too. The role decides what the peer may claim in the handshake
(handshake.py): a client or admin certificate connects only as a client, a node-monitor certificate
only as a node monitor, a scheduler's only as a scheduler. A server's host name is not checked: any
certificate of the cluster CA with the right role may serve that role (the CA is the cluster's own).

Error handling: `TLS(...)` checks the three files at once and raises TLSConfigError with one line
(a missing or unreadable file, a key that group or others may read (as ssh refuses one), a key that
does not match its certificate, a certificate that is expired, not yet valid, not signed by the CA, has
no role, or names its holder, role or user twice). A failed TLS handshake becomes one line from
`describe_failure` (another CA, an expired certificate, a peer that does not speak TLS); a peer whose
certificate names its holder, role or user twice is refused with one line too (identity_of_subject).
"""

from __future__ import annotations

import datetime
import os
import ssl
from dataclasses import dataclass, field
from typing import cast

import trio

from ..errors import SparrowError
from .auth import too_open
from .gate import PENDING_REFUSAL, REFUSAL_BYTES
from .limits import clip
from .tls_channel import TLSChannel

TLS_CA_ENV = "SPARROW_TLS_CA"
TLS_CERT_ENV = "SPARROW_TLS_CERT"
TLS_KEY_ENV = "SPARROW_TLS_KEY"
ROLES = ("scheduler", "node-monitor", "client", "admin", "monitor")
# the handshake role each certificate role may claim (a monitor's: none)
CLAIMS = {"scheduler": "scheduler", "node-monitor": "node-monitor", "client": "client", "admin": "client"}
METRICS_READERS = ("admin", "monitor")  # the roles whose certificates may read metrics and dashboards over HTTPS
_EXPIRED = 10  # X509_V_ERR_CERT_HAS_EXPIRED
_NOT_YET_VALID = 9  # X509_V_ERR_CERT_NOT_YET_VALID
_UNKNOWN_ISSUER = {2, 18, 19, 20, 21}  # unable to get issuer / self-signed / local issuer ...


class TLSConfigError(SparrowError, ValueError):
    """The CA, certificate or key files cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class Identity:
    """Who a certificate says its holder is: `name` (CN), `role` (OU) and `user` (UID, clients)."""

    name: str
    role: str
    user: str = ""

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def may_claim(self, role: str) -> bool:
        return CLAIMS.get(self.role) == role

    @property
    def may_read_metrics(self) -> bool:
        return self.role in METRICS_READERS


@dataclass(frozen=True)
class TLS:
    """The cluster CA's certificate `ca`, this peer's certificate `cert` and private key `key` (paths).

    `identity` is what `cert` says this peer is. `server_context()` and `client_context()` are the
    ssl contexts of either side of a link (made once)."""

    ca: str
    cert: str
    key: str
    identity: Identity = field(init=False, compare=False)
    _contexts: dict = field(init=False, compare=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("ca", "cert", "key"):
            path = getattr(self, name)
            if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
                raise TLSConfigError(f"TLS {name} must be a file path, got {path!r}")
            object.__setattr__(self, name, os.fspath(path))
        object.__setattr__(self, "identity", check_files(self.ca, self.cert, self.key))
        self.server_context()  # loads the files into OpenSSL now, so a problem is found at start
        self.client_context()

    def server_context(self) -> ssl.SSLContext:
        """The context a service accepts with: its own certificate, and a peer's required and checked
        against the cluster CA."""
        return self._context(ssl.Purpose.CLIENT_AUTH)

    def client_context(self) -> ssl.SSLContext:
        """The context a peer dials with: its own certificate, and the service's checked against the
        cluster CA (roles are checked by the handshake, not host names)."""
        return self._context(ssl.Purpose.SERVER_AUTH)

    def _context(self, purpose: ssl.Purpose) -> ssl.SSLContext:
        ctx = self._contexts.get(purpose)
        if ctx is None:
            ctx = ssl.create_default_context(purpose, cafile=self.ca)
            ctx.check_hostname = False  # the role is checked instead (see the module's comment)
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            # a TLS 1.2 session is never renegotiated (a server's HelloRequest, a client's new ClientHello:
            # answered with a no_renegotiation alert): the certificate the handshake checked, hence the
            # peer's role and user, stays the session's, and a peer cannot make this side redo handshakes
            ctx.options |= ssl.OP_NO_RENEGOTIATION
            if purpose is ssl.Purpose.CLIENT_AUTH:
                ctx.num_tickets = 0  # sessions are never resumed: no TLS 1.3 tickets to make, send and parse
            try:
                ctx.load_cert_chain(self.cert, self.key)
            except ssl.SSLError as exc:
                raise TLSConfigError(
                    f"TLS key {self.key} cannot be used with {self.cert}: {exc.reason or exc}"
                ) from None
            self._contexts[purpose] = ctx
        return ctx


def load_tls(
    ca: str | os.PathLike | None = None, cert: str | os.PathLike | None = None, key: str | os.PathLike | None = None
) -> TLS | None:
    """A TLS from the paths given, else from SPARROW_TLS_CA / SPARROW_TLS_CERT / SPARROW_TLS_KEY; None
    when none of the three is set anywhere. Raises TLSConfigError when only some are."""
    given = {"ca": ca, "cert": cert, "key": key}
    if all(v is None for v in given.values()):
        given = {
            "ca": os.environ.get(TLS_CA_ENV),
            "cert": os.environ.get(TLS_CERT_ENV),
            "key": os.environ.get(TLS_KEY_ENV),
        }
    missing = [name for name, v in given.items() if not v]
    if len(missing) == 3:
        return None
    if missing:
        raise TLSConfigError(f"TLS needs a CA, a certificate and a key: the {' and the '.join(missing)} is missing")
    return TLS(**cast("dict[str, str]", given))  # none is missing, checked above


def check_files(ca: str, cert: str, key: str) -> Identity:
    """The identity in `cert`, once `ca`, `cert` and `key` are found usable together (see TLSConfigError)."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    ca_cert = x509.load_pem_x509_certificate(_read(ca, "CA certificate"))
    own = x509.load_pem_x509_certificate(_read(cert, "certificate"))
    try:
        problem = too_open(key, os.stat(key), "TLS key")
    except OSError:
        problem = None  # _read says why
    if problem is not None:
        raise TLSConfigError(problem)
    try:
        private = serialization.load_pem_private_key(_read(key, "key"), password=None)
    except (ValueError, TypeError) as exc:
        raise TLSConfigError(f"TLS key {key} is not an unencrypted PEM private key: {exc}") from None
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if private.public_key().public_bytes(*spki) != own.public_key().public_bytes(*spki):
        raise TLSConfigError(f"TLS key {key} does not belong to the certificate {cert}")
    now = datetime.datetime.now(datetime.timezone.utc)
    if own.not_valid_after_utc < now:
        raise TLSConfigError(f"TLS certificate {cert} expired on {own.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    if own.not_valid_before_utc > now:
        raise TLSConfigError(
            f"TLS certificate {cert} is not valid before {own.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
        )
    try:
        own.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        raise TLSConfigError(f"TLS certificate {cert} is not signed by the CA {ca}") from None
    try:
        identity = identity_of_subject([(a.oid.dotted_string, str(a.value)) for a in own.subject])
    except AmbiguousSubject as exc:
        raise TLSConfigError(f"TLS certificate {cert} cannot be used: {exc}") from None
    if identity is None:
        raise TLSConfigError(f"TLS certificate {cert} names no sparrow role (make one with: sparrow certs issue)")
    return identity


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TLSConfigError(f"cannot read the TLS {what} {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN" not in data:
        raise TLSConfigError(f"TLS {what} {path} is not a PEM file")
    return data


_CN, _OU, _UID = "2.5.4.3", "2.5.4.11", "0.9.2342.19200300.100.1.1"
_NAMES = {"commonName": _CN, "organizationalUnitName": _OU, "userId": _UID}
_IDENTITY_ATTRIBUTES = {_CN: "CN", _OU: "OU", _UID: "UID"}  # each at most once in a subject


def identity_of_subject(attributes: list[tuple[str, str]]) -> Identity | None:
    """The identity in a subject given as (dotted OID or ssl's long name, value) pairs; None if it has
    no known role.

    Error handling: raises AmbiguousSubject for a subject that names its holder, role or user more
    than once (two OUs, say "client" then "admin": which one would it be?) or a user with control
    characters. `sparrow certs` never makes one, an organisation's own CA may: it is refused, not read
    one way or the other."""
    found: dict[str, str] = {}
    for key, value in attributes:
        oid = _NAMES.get(key, key)
        if oid in _IDENTITY_ATTRIBUTES and oid in found:
            raise AmbiguousSubject(
                f"its subject has more than one {_IDENTITY_ATTRIBUTES[oid]} ({clip(found[oid])!r}, {clip(value)!r}): "
                f"an identity must mean one thing"
            )
        found[oid] = value
    role = found.get(_OU)
    user = found.get(_UID, "")
    if not user.isprintable():
        raise AmbiguousSubject(f"its subject's UID {clip(user)!r} has control characters")
    if role not in ROLES:
        return None
    return Identity(found.get(_CN, ""), role, user if role in ("client", "admin") else "")


def peer_identity(channel: TLSChannel) -> Identity | None:
    """What the peer's certificate (verified by the TLS handshake) says it is; None if it names no role.
    Raises TLSFailure (one line) for an ambiguous subject (identity_of_subject)."""
    cert = channel.getpeercert()
    if not cert:
        return None
    try:
        return identity_of_subject([pair for rdn in cert.get("subject", ()) for pair in rdn])
    except AmbiguousSubject as exc:
        raise TLSFailure(f"TLS: the peer's certificate is refused: {exc}") from None


async def start_tls(stream: trio.abc.Stream, tls: TLS, *, server_side: bool) -> TLSChannel:
    """The TLS session of `stream`, its handshake done (the caller bounds it in time); the Connection
    over `stream` encrypts and decrypts with it.

    Error handling: raises TLSFailure(one line, see describe_failure) when the handshake fails; its
    message is PENDING_REFUSAL when the service said so in plain text instead (gate.py)."""
    channel = TLSChannel(tls.server_context() if server_side else tls.client_context(), server_side=server_side)
    try:
        await channel.handshake(stream)
    except (ssl.SSLError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        if channel.handshake_tail.endswith(REFUSAL_BYTES):  # the service's gate evicted us (gate.py)
            raise TLSFailure(PENDING_REFUSAL) from None
        raise TLSFailure(describe_failure(exc, server_side)) from None
    return channel


class TLSFailure(SparrowError):
    """A TLS handshake failed; the message is one line saying why."""


class AmbiguousSubject(SparrowError, ValueError):
    """A certificate's subject could mean two identities (identity_of_subject); the message says why."""


def describe_failure(exc: BaseException, server_side: bool) -> str:
    """One line for a failed TLS handshake seen from the server side or the client side."""
    peer = "the client" if server_side else "the server"
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = exc.verify_code
        if code == _EXPIRED:
            return f"TLS: {peer}'s certificate has expired"
        if code == _NOT_YET_VALID:
            return f"TLS: {peer}'s certificate is not valid yet"
        if code in _UNKNOWN_ISSUER:
            return f"TLS: {peer}'s certificate is not signed by this cluster's CA"
        return f"TLS: {peer}'s certificate was refused: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or ""
        if reason in (
            "WRONG_VERSION_NUMBER",
            "HTTP_REQUEST",
            "RECORD_LAYER_FAILURE",
            "PACKET_LENGTH_TOO_LONG",
            "UNKNOWN_PROTOCOL",
        ):
            return f"TLS: {peer} does not speak TLS (a plaintext peer: both sides need TLS, or both --insecure)"
        if reason == "UNEXPECTED_EOF_WHILE_READING":
            return (
                f"TLS: {peer} closed the connection during the TLS handshake (it may have refused this side's "
                f"certificate, or not speak TLS: its log says which)"
            )
        if reason in ("TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN"):
            return f"TLS: {peer} refused this side's certificate (it is not from {peer}'s CA)"
        if reason == "SSLV3_ALERT_CERTIFICATE_EXPIRED":
            return f"TLS: {peer} refused this side's certificate: it has expired"
        if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
            return f"TLS: {peer} sent no certificate"
        if reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED":
            return f"TLS: {peer} requires a certificate"
        return f"TLS: handshake with {peer} failed: {reason or exc}"
    return f"TLS: {peer} closed the connection during the TLS handshake"
