"""One identity, one meaning: a certificate of the cluster CA whose subject names its holder, role or user more
than once (two OUs "client" then "admin", two UIDs, two CNs), or a user with control characters, is refused:
as this peer's own certificate (TLSConfigError) and as a peer's at the handshake (one log line, the connection
closed). The CA here is the test's, signing subjects `sparrow certs` never makes (an organisation's CA may)."""

from __future__ import annotations

import datetime
import logging
import os
import socket
import ssl

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sparrow_runtime import LinkConfig, SchedulerConfig, serve_scheduler
from sparrow_runtime.wire import certs
from sparrow_runtime.wire.tls import TLS, AmbiguousSubject, TLSConfigError, identity_of_subject

CN, OU, UID = NameOID.COMMON_NAME, NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.USER_ID
AMBIGUOUS = {
    "two-OUs": ([(CN, "mallory"), (OU, "client"), (OU, "admin"), (UID, "mallory")], "more than one OU"),
    "two-UIDs": ([(CN, "mallory"), (OU, "client"), (UID, "mallory"), (UID, "alice")], "more than one UID"),
    "two-CNs": ([(CN, "mallory"), (CN, "alice"), (OU, "client"), (UID, "mallory")], "more than one CN"),
    "UID-newline": ([(CN, "mallory"), (OU, "client"), (UID, "alice\nroot")], "control characters"),
    "UID-escape": ([(CN, "mallory"), (OU, "client"), (UID, "alice\x1b[2K")], "control characters"),
}


def _sign(folder, name: str, attributes) -> tuple[str, str]:
    """A key and a certificate of `attributes` (OID, value) signed by the CA in `folder`: their paths."""
    ca_cert = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((folder / "ca-key.pem").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return str(cert_path), str(key_path)


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ambiguous-ca")
    certs.init_ca(folder)
    certs.issue(folder, "sched", "scheduler")
    return folder


@pytest.mark.parametrize("kind", sorted(AMBIGUOUS))
def test_an_ambiguous_certificate_of_ones_own_is_refused_at_start(ca, kind):
    attributes, reason = AMBIGUOUS[kind]
    cert, key = _sign(ca, kind, attributes)
    with pytest.raises(TLSConfigError, match=reason):
        TLS(str(ca / "ca.pem"), cert, key)


@pytest.mark.parametrize("kind", sorted(AMBIGUOUS))
def test_a_peer_with_an_ambiguous_certificate_is_refused_with_one_line(ca, kind, caplog):
    """The TLS handshake succeeds (the CA signed it), then the service reads the subject, refuses it with one
    log line naming why, and closes the connection before any Challenge."""
    attributes, reason = AMBIGUOUS[kind]
    cert, key = _sign(ca, kind, attributes)
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca / "ca.pem"))
    context.check_hostname = False
    context.load_cert_chain(cert, key)

    def dial(address) -> bytes:
        with socket.create_connection(address, timeout=5) as raw, context.wrap_socket(raw) as sock:
            try:
                return sock.recv(4096)
            except (ssl.SSLError, ConnectionResetError):
                return b""

    async def main():
        tls = TLS(str(ca / "ca.pem"), str(ca / "sched.pem"), str(ca / "sched-key.pem"))
        async with trio.open_nursery() as nursery:
            address = await nursery.start(serve_scheduler, SchedulerConfig(link=LinkConfig(tls=tls)))
            assert await trio.to_thread.run_sync(dial, address) == b""  # closed, no Challenge
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, logger="sparrow_runtime"):
        trio.run(main)
    refusals = [r.getMessage() for r in caplog.records if "refused connection" in r.getMessage()]
    assert len(refusals) == 1 and reason in refusals[0] and "\n" not in refusals[0]


def test_a_subject_with_one_of_each_is_read_as_before():
    pairs = [("commonName", "alice"), ("organizationalUnitName", "client"), ("userId", "alice")]
    identity = identity_of_subject(pairs)
    assert identity is not None and (identity.name, identity.role, identity.user) == ("alice", "client", "alice")
    with pytest.raises(AmbiguousSubject, match="more than one OU"):
        identity_of_subject([*pairs, ("organizationalUnitName", "admin")])
    with pytest.raises(AmbiguousSubject, match="more than one OU"):  # the same OID spelled both ways
        identity_of_subject([*pairs, ("2.5.4.11", "admin")])
