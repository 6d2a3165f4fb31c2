"""The HTTP server of a service's `--metrics-port`: Prometheus metrics at /metrics, and a scheduler's
dashboard (runtime/dashboard/) at every other path, from daemon threads beside the trio loop.

With `tls` (the service's tls.TLS) it serves HTTPS with the service's own certificate and asks every
client for a certificate of the cluster CA (mutual TLS, as the service's port does): one whose role
may read metrics (an admin's or a monitor's, tls.METRICS_READERS) is served, any other certificate
gets 403 naming its role, and a client without one, or with another CA's, fails the TLS handshake.
Prometheus scrapes it with `scheme: https` and a `tls_config` (deploy/prometheus/prometheus.yml).

Error handling: a client that fails the TLS handshake, is too slow (REQUEST_TIMEOUT) or drops the
connection costs one warning line (no traceback) and its own thread; the server serves the others.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import ssl
import sys
import threading
import wsgiref.simple_server
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..wire.tls import TLS, AmbiguousSubject, describe_failure, identity_of_subject
from .metrics import INSTALL_HINT, require_prometheus

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment  # the WSGI types (typeshed only)
    from prometheus_client import CollectorRegistry

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT = 10.0  # seconds a client may take over the TLS handshake, and over each read or write
IDENTITY = "sparrow.identity"  # the WSGI environ key of the client certificate's tls.Identity (HTTPS only)


def serve_metrics(
    registry: CollectorRegistry | None,
    host: str,
    port: int,
    pages: WSGIApplication | None = None,
    tls: TLS | None = None,
) -> tuple[str, int]:
    """Serve HTTP (HTTPS with `tls`) on host:port from daemon threads; returns the bound address (port 0:
    any free one).

    `/metrics`: the Prometheus metrics of `registry` (None: a 503 saying how to install
    prometheus-client). Every other path: the WSGI app `pages` (the scheduler's dashboard), or, without
    one, the metrics again, as prometheus-client's own server does.
    """
    metrics = _no_prometheus if registry is None else require_prometheus().make_wsgi_app(registry)
    other = pages if pages is not None else metrics

    def route(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return (metrics if environ.get("PATH_INFO") == "/metrics" else other)(environ, start_response)

    app: WSGIApplication = route

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    if tls is None:
        server_class: type = _ThreadingWSGIServer
        handler: type = _QuietHandler
    else:
        server_class, handler, app = _HTTPSServer, _HTTPSHandler, _readers_only(app)
    server_class = type("HTTPServer", (server_class,), {"address_family": family})
    server: wsgiref.simple_server.WSGIServer = wsgiref.simple_server.make_server(host, port, app, server_class, handler)
    if tls is not None:
        server.tls_context = tls.server_context()  # type: ignore[attr-defined]  # _HTTPSServer's
    threading.Thread(target=server.serve_forever, name="sparrow-http", daemon=True).start()
    return host, server.server_port


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True  # a slow client never holds up the service's exit

    def handle_error(self, request: object, client_address: object) -> None:
        """One line for a client that failed or went away, instead of socketserver's traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ssl.SSLError):
            why = describe_failure(exc, server_side=True)
        else:
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        logger.warning("metrics: request from %s failed: %s", _where(client_address), why)


class _HTTPSServer(_ThreadingWSGIServer):
    """The same server on TLS: each accepted socket is wrapped (its handshake runs in the request's
    thread, not in the accept loop, so a slow client holds up no other)."""

    tls_context: ssl.SSLContext

    def get_request(self) -> tuple[ssl.SSLSocket, Any]:
        sock, address = super().get_request()
        return self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: object) -> None:
        """No line on standard error per request (a dashboard polls every second)."""


class _HTTPSHandler(_QuietHandler):
    def setup(self) -> None:
        self.request.settimeout(REQUEST_TIMEOUT)
        self.request.do_handshake()  # raises for a client without a certificate of the cluster CA
        super().setup()

    def get_environ(self) -> dict:
        environ = super().get_environ()
        cert = self.request.getpeercert() or {}
        try:
            environ[IDENTITY] = identity_of_subject([pair for rdn in cert.get("subject", ()) for pair in rdn])
        except AmbiguousSubject:  # read as no role: refused (403)
            environ[IDENTITY] = None
        environ["wsgi.url_scheme"] = "https"
        return environ


def _readers_only(app: WSGIApplication) -> WSGIApplication:
    """`app` for clients whose certificate may read metrics; 403 naming the role for the others."""

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        identity = environ.get(IDENTITY)
        if identity is not None and identity.may_read_metrics:
            return app(environ, start_response)
        role = "no sparrow role" if identity is None else f"the role {identity.role}"
        body = (
            f"this certificate has {role}: metrics and dashboards are for admin and monitor certificates "
            f"(sparrow certs issue NAME --role monitor)\n"
        ).encode()
        start_response(
            "403 Forbidden", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        )
        return [body]

    return guarded


def _where(client_address: Any) -> str:
    try:
        return f"{client_address[0]}:{client_address[1]}"
    except (TypeError, IndexError):
        return str(client_address)


def _no_prometheus(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    body = f"Prometheus metrics need the prometheus-client package: {INSTALL_HINT}\n".encode()
    start_response(
        "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return [body]
