"""The HTTP server of a service's `--metrics-port`: Prometheus metrics at /metrics, and a scheduler's
dashboard (runtime/dashboard/) at every other path, from daemon threads beside the trio loop."""

from __future__ import annotations

import socket
import socketserver
import threading
import wsgiref.simple_server

from .metrics import INSTALL_HINT, require_prometheus


def serve_metrics(registry, host: str, port: int, pages=None) -> tuple[str, int]:
    """Serve HTTP on host:port from daemon threads; returns the bound address (port 0: any free one).

    `/metrics`: the Prometheus metrics of `registry` (None: a 503 saying how to install
    prometheus-client). Every other path: the WSGI app `pages` (the scheduler's dashboard), or, without
    one, the metrics again, as prometheus-client's own server does.
    """
    metrics = _no_prometheus if registry is None else require_prometheus().make_wsgi_app(registry)
    other = pages if pages is not None else metrics

    def app(environ, start_response):
        return (metrics if environ.get("PATH_INFO") == "/metrics" else other)(environ, start_response)

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    server_class = type("HTTPServer", (_ThreadingWSGIServer,), {"address_family": family})
    server: wsgiref.simple_server.WSGIServer = wsgiref.simple_server.make_server(
        host, port, app, server_class, _QuietHandler
    )
    threading.Thread(target=server.serve_forever, name="sparrow-http", daemon=True).start()
    return host, server.server_port


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True  # a slow client never holds up the service's exit


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format, *args) -> None:
        """No line on standard error per request (a dashboard polls every second)."""


def _no_prometheus(environ, start_response):
    body = f"Prometheus metrics need the prometheus-client package: {INSTALL_HINT}\n".encode()
    start_response(
        "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return [body]
