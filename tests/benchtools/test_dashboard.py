"""benchtools/dashboard.py without asv: what counts as loading from another machine, and the direction
each benchmark is marked with for the page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchtools.dashboard import mark_directions, off_machine_references


def test_asv_own_page_is_caught_loading_from_cdns(tmp_path: Path) -> None:
    """asv 0.6's own index.html (jQuery, flot, bootstrap, stupidtable, md5 from CDNs) fails the check."""
    asv = pytest.importorskip("asv")
    shutil.copytree(Path(asv.__file__).parent / "www", tmp_path / "www")
    found = off_machine_references(tmp_path)
    assert found and all(ref.startswith("www/index.html: https://") for ref in found)
    for library in ("jquery", "flot", "bootstrap", "stupidtable", "md5"):
        assert any(library in ref for ref in found), library


def test_every_kind_of_off_machine_reference_is_found(tmp_path: Path) -> None:
    """Scripts, stylesheets, images (srcset too), protocol-relative URLs, and a stylesheet's url() and
    @import are caught; relative and data: references are not."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(
        '<script src="app.js"></script><script src="//cdn.example/x.js"></script>'
        '<link rel="stylesheet" href="HTTPS://cdn.example/x.css"><link href="local.css" rel="stylesheet">'
        '<img src="data:image/png;base64,AA==" srcset="a.png 1x, http://img.example/b.png 2x">'
        '<a href="https://example.org/">a link loads nothing</a>'
    )
    (tmp_path / "style.css").write_text(
        "@import 'https://fonts.example/f.css'; .a { background: url(img/x.png) } "
        '.b { background: url("http://img.example/y.png") } @font-face { src: url(./f.woff2) }'
    )
    assert sorted(off_machine_references(tmp_path)) == [
        "style.css: http://img.example/y.png",
        "style.css: https://fonts.example/f.css",
        "sub/page.html: //cdn.example/x.js",
        "sub/page.html: HTTPS://cdn.example/x.css",
        "sub/page.html: http://img.example/b.png",
    ]


def test_a_local_page_passes(tmp_path: Path) -> None:
    """A page whose every reference stays in its folder has nothing to report."""
    (tmp_path / "index.html").write_text(
        '<script type="module" src="./assets/index.js"></script><link href="./assets/a.css">'
    )
    assert off_machine_references(tmp_path) == []


def test_rates_are_marked_higher_is_better_and_the_rest_lower(tmp_path: Path) -> None:
    """Units per second are better higher; times, ms, bytes and ratios to the baseline lower."""
    units = {
        "a.track_tasks_per_second": "tasks/s",
        "b.time_x": "seconds",
        "c.track_time_vs_python": "ratio",
        "d.track_latency_ms": "ms",
        "e.track_requests": "get_task/s",
    }
    (tmp_path / "index.json").write_text(json.dumps({"benchmarks": {k: {"unit": u} for k, u in units.items()}}))
    mark_directions(tmp_path)
    marked = json.loads((tmp_path / "index.json").read_text())["benchmarks"]
    assert {name: b["less_is_better"] for name, b in marked.items()} == {
        "a.track_tasks_per_second": False,
        "b.time_x": True,
        "c.track_time_vs_python": True,
        "d.track_latency_ms": True,
        "e.track_requests": False,
    }
