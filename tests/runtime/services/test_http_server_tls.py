"""The metrics and dashboard server on TLS (services/http_server.py): HTTPS with the service's
certificate, served to admin and monitor certificates of the cluster CA only; a client certificate
gets 403 naming its role; no certificate, another CA's, or plain HTTP fails in one log line; the
server keeps serving after each."""

from __future__ import annotations

import http.client
import logging
import ssl

import pytest

from sparrow_runtime.services.http_server import serve_metrics
from sparrow_runtime.services.metrics import new_registry


def _page(environ, start_response):
    body = b"the dashboard"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture(scope="module")
def https(cluster_certs):
    """A scheduler's metrics server on HTTPS (its address), a registry with one counter, and a page."""
    pytest.importorskip("prometheus_client")
    registry = new_registry()
    host, port = serve_metrics(registry, "127.0.0.1", 0, _page, tls=cluster_certs.tls("sched"))
    return host, port


def _context(cluster_certs, name: str | None, *, other_ca: bool = False) -> ssl.SSLContext:
    """A client's context trusting the cluster CA, presenting `name`'s certificate (None: none)."""
    ctx = ssl.create_default_context(cafile=str(cluster_certs.directory / "ca.pem"))
    ctx.check_hostname = False
    if name is not None:
        tls = cluster_certs.tls(name, other_ca=other_ca)
        ctx.load_cert_chain(tls.cert, tls.key)
    return ctx


def _get(address, ctx: ssl.SSLContext, path: str = "/metrics") -> tuple[int, str]:
    conn = http.client.HTTPSConnection(*address, context=ctx, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["prom", "root"])
def test_a_monitor_or_admin_certificate_reads_the_metrics_and_the_dashboard(https, cluster_certs, name):
    """prom (role monitor) and root (role admin) get /metrics and the pages beside it over HTTPS."""
    status, text = _get(https, _context(cluster_certs, name))
    assert status == 200 and "# HELP" in text
    assert _get(https, _context(cluster_certs, name), "/") == (200, "the dashboard")


def test_a_client_certificate_gets_403_naming_its_role(https, cluster_certs):
    """alice's client certificate is the cluster's, but a client sees only its own jobs: it may not read
    every user's figures. The answer says which roles may."""
    status, text = _get(https, _context(cluster_certs, "alice"))
    assert status == 403
    assert "the role client" in text and "admin and monitor certificates" in text and "--role monitor" in text


def test_refused_clients_cost_one_line_each_and_the_server_serves_the_next(https, cluster_certs, caplog):
    """No certificate, another CA's, and a plain HTTP request each fail (one warning line, no traceback),
    and a monitor's request after them is served."""
    failures = []
    with caplog.at_level(logging.WARNING, logger="sparrow_runtime.services.http_server"):
        for ctx in (_context(cluster_certs, None), _context(cluster_certs, "alice", other_ca=True)):
            with pytest.raises((ssl.SSLError, ConnectionError)) as caught:
                _get(https, ctx)
            failures.append(caught.value)
        plain = http.client.HTTPConnection(*https, timeout=10)
        try:
            plain.request("GET", "/metrics")
            with pytest.raises((http.client.HTTPException, ConnectionError)):
                plain.getresponse()
        finally:
            plain.close()
        assert _get(https, _context(cluster_certs, "prom"))[0] == 200
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("http_server")]
    assert len(lines) == 3, lines
    assert all(line.startswith("metrics: request from 127.0.0.1:") and "\n" not in line for line in lines)
    assert "sent no certificate" in lines[0] or "requires a certificate" in lines[0], lines[0]
    assert "not from" in lines[1] or "not signed by this cluster's CA" in lines[1], lines[1]
    assert "does not speak TLS" in lines[2], lines[2]
    assert "Traceback" not in caplog.text
