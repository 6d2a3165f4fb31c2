"""Making a cluster CA and the certificates it signs (`sparrow certs`), with `cryptography`'s
x509.CertificateBuilder.

A directory holds the CA as `ca.pem` (its certificate, given to every peer) and `ca-key.pem` (its key,
kept by whoever issues certificates), and each issued certificate as `NAME.pem` with its key
`NAME-key.pem`. Keys are ECDSA P-256 (fast handshakes), written mode 0600; a certificate carries
its role in the subject's OU and, for clients and admins, its user in the subject's UID (tls.py reads
them back). Client, admin and monitor certificates may only authenticate their holder (extended key
usage clientAuth); schedulers' and node monitors' may serve and dial (serverAuth and clientAuth). A
certificate's subject alternative names are its name and the `hosts` it is issued for (`--host`:
the names and addresses HTTPS clients such as Prometheus check; sparrow peers check roles instead).

Error handling: an unknown role, a bad name, user or host, an existing file (never overwritten unless
`force`), or a CA that cannot be read raises CertError with one line.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SparrowError
from .tls import ROLES

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

CA_CERT = "ca.pem"
CA_KEY = "ca-key.pem"
DEFAULT_CA_DAYS = 3650
DEFAULT_DAYS = 365
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")  # a DNS name: dot-separated labels
MAX_HOSTS = 32  # extra names per certificate


class CertError(SparrowError, ValueError):
    """A certificate cannot be made; the message says why in one line."""


def cert_paths(directory: str | os.PathLike, name: str) -> tuple[Path, Path]:
    """Where `issue` writes the certificate and key of `name` in `directory`."""
    return Path(directory) / f"{name}.pem", Path(directory) / f"{name}-key.pem"


def init_ca(
    directory: str | os.PathLike, *, name: str = "sparrow cluster CA", days: int = DEFAULT_CA_DAYS, force: bool = False
) -> tuple[Path, Path]:
    """Make a CA in `directory` (created mode 0700 if missing): returns the paths of ca.pem and ca-key.pem."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    folder = _folder(directory)
    cert_path, key_path = folder / CA_CERT, folder / CA_KEY
    _refuse_existing((cert_path, key_path), force)
    key = _new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(key_path, _key_pem(key), 0o600)
    _write(cert_path, _cert_pem(ca), 0o644)
    return cert_path, key_path


def issue(
    directory: str | os.PathLike,
    name: str,
    role: str,
    *,
    user: str = "",
    ca_dir: str | os.PathLike | None = None,
    days: float = DEFAULT_DAYS,
    not_before: datetime.datetime | None = None,
    force: bool = False,
    hosts: Sequence[str] = (),
) -> tuple[Path, Path]:
    """Issue a key and certificate for `name` with `role` (and `user`, for a client or admin: by default
    `name`) signed by the CA in `ca_dir` (default: `directory`); returns the certificate's and the key's
    paths (cert_paths). Valid from `not_before` (default: now) for `days`. The certificate's subject
    alternative names are `name` (a DNS name) and `hosts`: the host names and IP addresses a service is
    reached at, for HTTPS clients that check them (Prometheus, curl); sparrow peers check roles, not
    names (tls.py)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if role not in ROLES:
        raise CertError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CertError(f"name must be 1-64 letters, digits or ._@- (starting with a letter or digit), got {name!r}")
    if role in ("client", "admin"):
        user = user or name
        if not _NAME.fullmatch(user):
            raise CertError(f"user must be 1-64 letters, digits or ._@-, got {user!r}")
    elif user:
        raise CertError(f"--user is for client and admin certificates, not a {role}'s")
    alternative_names = [x509.DNSName(name.replace("@", "-").lower()), *_host_names(hosts)]
    folder = _folder(directory)
    ca_folder = Path(ca_dir) if ca_dir is not None else folder
    try:
        ca_cert = x509.load_pem_x509_certificate((ca_folder / CA_CERT).read_bytes())
        ca_key = serialization.load_pem_private_key((ca_folder / CA_KEY).read_bytes(), password=None)
    except OSError as exc:
        raise CertError(
            f"cannot read the CA in {ca_folder}: {exc.strerror or exc} (make one with: sparrow certs init)"
        ) from None
    except ValueError as exc:
        raise CertError(f"the CA in {ca_folder} cannot be read: {exc}") from None
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise CertError(f"the CA key in {ca_folder} is not an EC key (make the CA with: sparrow certs init)")
    cert_path, key_path = cert_paths(folder, name)
    _refuse_existing((cert_path, key_path), force)
    key = _new_key()
    attributes = [
        x509.NameAttribute(NameOID.COMMON_NAME, name),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, role),
    ]
    if user:
        attributes.append(x509.NameAttribute(NameOID.USER_ID, user))
    start = not_before or datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if role in ("scheduler", "node-monitor"):
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(key_path, _key_pem(key), 0o600)
    _write(cert_path, _cert_pem(cert), 0o644)
    return cert_path, key_path


def _host_names(hosts: Sequence[str]) -> list:
    """The subject alternative names of `hosts` (IP addresses and DNS names), checked."""
    from cryptography import x509

    if isinstance(hosts, str) or len(hosts) > MAX_HOSTS:
        raise CertError(f"hosts must be a list of at most {MAX_HOSTS} host names or IP addresses, got {hosts!r}")
    names: list = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
            continue
        except ValueError:
            pass
        if not isinstance(host, str) or not _HOST.fullmatch(host):
            raise CertError(f"--host must be a host name (like worker-1.example) or an IP address, got {host!r}")
        names.append(x509.DNSName(host.lower()))
    return names


def _new_key() -> ec.EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _folder(directory: str | os.PathLike) -> Path:
    """`directory`, made if missing: mode 0700, and so is each missing folder above it that it makes (a
    folder made to hold keys is no one else's to list)."""
    folder = Path(directory)
    try:
        for missing in reversed([folder, *folder.parents]):
            if not missing.exists():
                missing.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise CertError(f"cannot make the directory {folder}: {exc.strerror or exc}") from None
    return folder


def _refuse_existing(paths: Iterable[Path], force: bool) -> None:
    for path in paths:
        if path.exists() and not force:
            raise CertError(f"{path} exists already (remove it, or pass --force to replace it)")


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` with `mode` from its creation on (a key is never readable to others)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


LOCAL_NAMES = {"scheduler": "local-scheduler", "node-monitor": "local-node-monitor", "client": "local-client"}


def local_certs(directory: str | os.PathLike, user: str) -> dict[str, tuple[str, str, str]]:
    """The (CA, certificate, key) paths of each role of a cluster on one host (`sparrow local`,
    LocalCluster): a CA in `directory` and one certificate per role, made if missing and remade if
    unusable (expired, from a CA since replaced); the client's is an admin's for `user`, who owns
    the cluster and may run jobs as any user."""
    from .tls import TLSConfigError, check_files

    folder = _folder(directory)
    ca = folder / CA_CERT
    if not ca.exists() or not (folder / CA_KEY).exists():
        init_ca(folder, name="sparrow local CA", force=True)
    found = {}
    for role, name in LOCAL_NAMES.items():
        cert, key = cert_paths(folder, name)
        paths = (str(ca), str(cert), str(key))
        try:
            check_files(*paths)
        except TLSConfigError:
            issue(
                folder, name, "admin" if role == "client" else role, user=user if role == "client" else "", force=True
            )
        found[role] = paths
    return found
