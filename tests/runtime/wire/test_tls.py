"""TLS credentials and the TLS handshake: every unusable file and every refused peer is one line
naming what is wrong; a refused peer leaves the service serving the others."""

import datetime
import logging
import os
import shutil
import ssl
from functools import partial

import pytest
import trio

from sparrow_runtime.errors import HandshakeError
from sparrow_runtime.wire import certs
from sparrow_runtime.wire.handshake import HandshakeGate, accept_and_serve, connect
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.tls import TLS, TLSConfigError, load_tls


def _files(folder, name):
    return folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem"


def test_a_certificate_says_its_role_and_user(cluster_certs):
    """Role from the subject's OU, user from its UID (a client's defaults to its name)."""
    assert (cluster_certs.tls("alice").identity.role, cluster_certs.tls("alice").identity.user) == ("client", "alice")
    assert cluster_certs.tls("root").identity.admin
    assert cluster_certs.tls("nm0").identity.role == "node-monitor" and cluster_certs.tls("nm0").identity.user == ""


def test_unusable_files_are_one_line_each(cluster_certs, tmp_path):
    """A missing key, a key of another certificate, a readable key, a certificate of another CA, an
    expired one, and a certificate with no role: TLSConfigError saying which file and why."""
    d = cluster_certs.directory
    ca, alice, alice_key = _files(d, "alice")
    cases = {
        "cannot read the TLS key": (ca, alice, tmp_path / "missing-key.pem"),
        "does not belong to the certificate": (ca, alice, d / "bob-key.pem"),
        "is not signed by the CA": (ca, cluster_certs.other / "alice.pem", cluster_certs.other / "alice-key.pem"),
        "names no sparrow role": (ca, ca, d / "ca-key.pem"),
    }
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)
    expired, expired_key = certs.issue(tmp_path, "late", "client", ca_dir=d, days=1, not_before=old)
    cases["expired on"] = (ca, expired, expired_key)
    loose = tmp_path / "loose-key.pem"
    shutil.copy(alice_key, loose)
    loose.chmod(0o644)
    cases["has mode 0644: group and others must have no access to it; fix it with: chmod 600"] = (ca, alice, loose)
    for expected, files in cases.items():
        with pytest.raises(TLSConfigError) as caught:
            TLS(*files)
        assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_tls_from_the_environment_needs_all_three(cluster_certs, monkeypatch):
    """SPARROW_TLS_CA/CERT/KEY give credentials; only some of them is an error naming the missing ones."""
    ca, cert, key = map(str, _files(cluster_certs.directory, "alice"))
    monkeypatch.setenv("SPARROW_TLS_CA", ca)
    monkeypatch.setenv("SPARROW_TLS_CERT", cert)
    with pytest.raises(TLSConfigError, match="the key is missing"):
        load_tls()
    monkeypatch.setenv("SPARROW_TLS_KEY", key)
    assert load_tls().identity.user == "alice"


def test_issue_refuses_bad_requests_in_one_line(tmp_path, cluster_certs):
    """An unknown role, a user on a scheduler, an existing file, no CA: CertError, nothing written."""
    with pytest.raises(certs.CertError, match="role must be one of"):
        certs.issue(cluster_certs.directory, "x", "root")
    with pytest.raises(certs.CertError, match="--user is for client and admin"):
        certs.issue(cluster_certs.directory, "x", "scheduler", user="alice")
    with pytest.raises(certs.CertError, match="exists already"):
        certs.issue(cluster_certs.directory, "alice", "client")
    with pytest.raises(certs.CertError, match="cannot read the CA"):
        certs.issue(tmp_path / "nothing", "x", "client")
    assert not (tmp_path / "nothing" / "x.pem").exists()
    assert os.stat(cluster_certs.directory / "alice-key.pem").st_mode & 0o077 == 0


def _name_checked(ca, cert, key, server_hostname: str) -> None:
    """An HTTPS client's handshake (as curl's or Prometheus's: the CA and the host name checked) with a
    server holding `cert`, in memory; raises ssl.SSLCertVerificationError on a name mismatch."""
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(ca))  # check_hostname on, as an HTTPS client's
    bios = [ssl.MemoryBIO() for _ in range(4)]
    client = client_ctx.wrap_bio(bios[0], bios[1], server_hostname=server_hostname)
    server = server_ctx.wrap_bio(bios[2], bios[3], server_side=True)
    done = [False, False]
    while not all(done):
        for i, (side, out, peer_in) in enumerate(((client, bios[1], bios[2]), (server, bios[3], bios[0]))):
            try:
                side.do_handshake()
                done[i] = True
            except ssl.SSLWantReadError:
                pass
            if out.pending:
                peer_in.write(out.read())


def test_a_certificate_issued_with_hosts_passes_an_https_clients_name_check_for_each(cluster_certs, tmp_path):
    """`issue(hosts=...)` (`sparrow certs issue --host`): curl or Prometheus scraping a service's metrics
    by a host name or IP address it was issued for accepts its certificate; by another name, or by an
    address a certificate without hosts was not issued for, it refuses it."""
    ca = cluster_certs.directory / "ca.pem"
    hosts = ["worker-1.example", "10.77.0.2", "::1"]
    cert, key = certs.issue(tmp_path, "worker-1", "node-monitor", ca_dir=cluster_certs.directory, hosts=hosts)
    for name in ["worker-1", *hosts]:
        _name_checked(ca, cert, key, name)
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _name_checked(ca, cert, key, "worker-2.example")
    plain, plain_key = certs.issue(tmp_path, "worker-2", "node-monitor", ca_dir=cluster_certs.directory)
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _name_checked(ca, plain, plain_key, "10.77.0.3")
    assert TLS(ca, cert, key).identity.role == "node-monitor"  # still a sparrow peer's certificate


@pytest.mark.parametrize("hosts", [["bad host"], ["-x.example"], ["a" * 64 + ".example"], ["x"] * 33, "one.example"])
def test_issue_refuses_a_bad_host_in_one_line_and_writes_nothing(cluster_certs, tmp_path, hosts):
    """A host that is neither an IP address nor a DNS name, too many hosts, or a string instead of a
    list: CertError in one line, no file written."""
    with pytest.raises(certs.CertError) as caught:
        certs.issue(tmp_path, "w", "node-monitor", ca_dir=cluster_certs.directory, hosts=hosts)
    assert "host" in str(caught.value) and "\n" not in str(caught.value)
    assert not list(tmp_path.iterdir())


def _expired_client_context(cluster_certs, tmp_path) -> ssl.SSLContext:
    """A client context holding an expired certificate of the right CA (TLS() would refuse to load it)."""
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)
    cert, key = certs.issue(tmp_path, "late", "client", ca_dir=cluster_certs.directory, days=1, not_before=old)
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cluster_certs.directory / "ca.pem"))
    ctx.check_hostname = False
    ctx.load_cert_chain(cert, key)
    return ctx


async def _serve(certs_, task_status=trio.TASK_STATUS_IGNORED):
    """A bare TLS service (the scheduler's handshake) that closes each authenticated connection."""

    async def serve(conn):
        await conn.aclose()

    handler = partial(
        accept_and_serve,
        serve=serve,
        log=logging.getLogger("test"),
        gate=HandshakeGate(),
        link=LinkConfig(tls=certs_.tls("sched"), handshake_timeout=2.0),
        role="scheduler",
        node_id="s",
        allowed_roles=("client", "node-monitor"),
    )
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started(listeners[0].socket.getsockname()[:2])


def test_an_expired_client_certificate_is_refused_in_one_line_and_others_are_served(cluster_certs, tmp_path, caplog):
    """The service logs "the client's certificate has expired" (one line); a valid client connects next."""
    ctx = _expired_client_context(cluster_certs, tmp_path)

    async def main():
        async with trio.open_nursery() as nursery:
            address = await nursery.start(_serve, cluster_certs)
            raw = await trio.open_tcp_stream(*address)
            stream = trio.SSLStream(raw, ctx)
            with pytest.raises(trio.BrokenResourceError):
                await stream.do_handshake()
                await stream.receive_some(1)  # TLS 1.3: the refusal comes after the client's Finished
            await trio.aclose_forcefully(stream)
            good = await connect(address, link=LinkConfig(tls=cluster_certs.tls("alice")), role="client", peer_id="c")
            assert good.peer_role == "scheduler"
            await good.aclose()
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING):
        trio.run(main)
    lines = [r.getMessage() for r in caplog.records if "refused connection" in r.getMessage()]
    assert lines == [lines[0]] and lines[0].endswith("TLS: the client's certificate has expired")


def _client_refusal(client_tls: TLS, *, secret: bytes | None, server_tls: TLS | None) -> str:
    """The HandshakeError a TLS client gets from a scheduler of `secret`/`server_tls` on loopback."""

    async def serve(conn):
        await conn.aclose()

    async def main() -> str:
        handler = partial(
            accept_and_serve,
            serve=serve,
            log=logging.getLogger("test"),
            gate=HandshakeGate(),
            link=LinkConfig(secret=secret, tls=server_tls, handshake_timeout=2.0),
            role="scheduler",
            node_id="s",
            allowed_roles=("client",),
        )
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, handler, listeners)
            address = listeners[0].socket.getsockname()[:2]
            with pytest.raises(HandshakeError) as caught:
                await connect(address, link=LinkConfig(tls=client_tls), role="client", peer_id="c")
            nursery.cancel_scope.cancel()
        return str(caught.value)

    return trio.run(main)


def test_a_tls_client_against_a_plaintext_service_is_one_line(cluster_certs):
    """Connecting with TLS to a service of the shared-secret mode says the server does not speak TLS."""
    reason = _client_refusal(cluster_certs.tls("alice"), secret=b"s", server_tls=None)
    assert "the server does not speak TLS" in reason and "\n" not in reason


def test_a_server_certificate_of_the_wrong_role_is_refused_by_the_client(cluster_certs, tmp_path):
    """A node monitor's certificate serving as a scheduler: the client refuses it, naming both."""
    reason = _client_refusal(cluster_certs.tls("alice"), secret=None, server_tls=cluster_certs.tls("nm0"))
    assert "claims to be a scheduler but holds the node-monitor certificate" in reason


def test_a_monitor_certificate_connects_to_no_service_port(cluster_certs):
    """Prometheus's monitor certificate reads HTTPS metrics only: as a client of a scheduler it is refused,
    naming its role."""
    reason = _client_refusal(cluster_certs.tls("prom"), secret=None, server_tls=cluster_certs.tls("sched"))
    assert "the monitor certificate 'prom' may not connect as a client" in reason and "\n" not in reason


def test_a_ca_made_in_a_new_folder_makes_each_missing_folder_private(tmp_path):
    """`sparrow local` makes its state folder as the parent of tls/: every folder certs.py makes is 0700."""
    import stat

    from sparrow_runtime.wire import certs

    certs.init_ca(tmp_path / "state" / "sparrow" / "tls")
    for folder in (tmp_path / "state", tmp_path / "state" / "sparrow", tmp_path / "state" / "sparrow" / "tls"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
