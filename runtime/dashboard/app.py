"""The dashboard as a WSGI application, served by the metrics HTTP server (http_server.serve_metrics):

    /                the page (HTML, with its live part)
    /live            the live part alone (the page's script fetches it every second)
    /dashboard.json  the same View as JSON, for scripts
    /static/NAME     the page's stylesheet and script (package data, nothing from the internet)

Read-only: GET and HEAD only. It runs in the HTTP server's threads and reads nothing but the
sampler's latest View. A rendered page is kept for as long as its View is the latest one, so many
viewers cost no more than one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from importlib.resources import files
from typing import TYPE_CHECKING

import msgspec

from .page import render_live, render_page
from .sampler import Sampler

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment  # the WSGI types (typeshed only)

ASSETS = {
    "dashboard.css": "text/css; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
}
SECURITY_HEADERS = [
    # everything the page uses comes from here; no inline script; no framing by other sites
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; "
        "img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
]


class DashboardApp:
    """WSGI app of a scheduler's dashboard, over `sampler.view`."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self._assets = {name: files(__package__).joinpath("assets", name).read_bytes() for name in ASSETS}
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[object, bytes]] = {}  # route -> (the View it was made from, body)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        if method not in ("GET", "HEAD"):
            return _reply(
                start_response,
                "405 Method Not Allowed",
                "text/plain; charset=utf-8",
                b"the dashboard is read-only: GET or HEAD\n",
                method,
                [("Allow", "GET, HEAD")],
            )
        if path in ("/", "/index.html"):
            body, kind = self._rendered("page"), "text/html; charset=utf-8"
        elif path == "/live":
            body, kind = self._rendered("live"), "text/html; charset=utf-8"
        elif path == "/dashboard.json":
            body, kind = self._rendered("json"), "application/json"
        elif path.startswith("/static/") and path[len("/static/") :] in ASSETS:
            name = path[len("/static/") :]
            return _reply(
                start_response, "200 OK", ASSETS[name], self._assets[name], method, [("Cache-Control", "max-age=300")]
            )
        else:
            return _reply(
                start_response,
                "404 Not Found",
                "text/plain; charset=utf-8",
                b"not found: the dashboard is at /\n",
                method,
            )
        return _reply(start_response, "200 OK", kind, body, method, [("Cache-Control", "no-store")])

    def _rendered(self, route: str) -> bytes:
        view = self.sampler.view
        with self._lock:
            cached = self._cache.get(route)
            if cached is not None and cached[0] is view:
                return cached[1]
        if route == "page":
            body = render_page(view).encode()
        elif route == "live":
            body = render_live(view).encode()
        else:  # jobs as objects, like `sparrow status --json` (JobStatus travels as an array)
            data = msgspec.to_builtins(view)
            data["jobs"] = [msgspec.structs.asdict(job) for job in view.jobs]
            body = msgspec.json.encode(data)
        with self._lock:
            self._cache[route] = (view, body)
        return body


def _reply(
    start_response: StartResponse,
    status: str,
    kind: str,
    body: bytes,
    method: str,
    extra: Iterable[tuple[str, str]] = (),
) -> list[bytes]:
    headers = [("Content-Type", kind), ("Content-Length", str(len(body))), *SECURITY_HEADERS, *extra]
    start_response(status, headers)
    return [b"" if method == "HEAD" else body]
