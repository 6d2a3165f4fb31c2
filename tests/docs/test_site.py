"""The docs site (mkdocs.yml): it builds in strict mode, and the strictness catches a broken link; its
API reference has every public name; no page loads anything from the internet, statically and in headless
Chromium (served from loopback), where search works offline. Screenshots of the entry page and an API page
go to SPARROW_SCREENSHOT_DIR, else the test's tmp dir."""

from __future__ import annotations

import functools
import http.server
import importlib
import inspect
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bench.cdp import Browser, find_chromium

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 300  # seconds; about 35 s on a shared 2-core machine


def _needs(module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"no {module}: CI must install the docs extra (pip install -e '.[docs]')")
        pytest.skip(f"no {module} (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def config() -> dict:
    yaml = _needs("yaml")
    _needs("mkdocs")
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


@pytest.fixture(scope="module")
def site(config, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    if build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{build.stderr[-4000:]}")
    return out


def documented_modules(config: dict) -> list[str]:
    python = config["plugins"][2]["mkdocstrings"]["handlers"]["python"]["options"]
    (extension,) = python["extensions"]
    return next(iter(extension.values()))["modules"]


def public_names(module_name: str) -> list[str]:
    """A module's `__all__`, or else the names it defines itself without a leading underscore."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", module_name) == module_name
    ]


def test_the_strict_config_fails_a_build_with_a_broken_link_or_anchor(config, tmp_path):
    """mkdocs.yml's own settings (no --strict flag) turn a broken link and a missing anchor into a failure."""
    yaml = _needs("yaml")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[gone](missing.md) and [nowhere](#no-such-heading)\n")
    small = {key: config[key] for key in ("site_name", "strict", "validation", "theme", "markdown_extensions")}
    small.update(docs_dir=str(tmp_path / "docs"), site_dir=str(tmp_path / "site"), nav=["index.md"], plugins=[])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small))
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode != 0
    assert "missing.md" in build.stderr and "no-such-heading" in build.stderr


def test_the_api_reference_has_every_public_name_of_each_documented_module(config, site):
    """Each documented module's exports (sparrow_core's from the extension's stubs) have an entry with text."""
    pages = {}
    for page in (ROOT / "docs" / "api").glob("*.md"):
        for module in re.findall(r"^::: ([\w.]+)$", page.read_text(), flags=re.M):
            pages[module] = (site / "api" / page.stem / "index.html").read_text()
    modules = documented_modules(config)
    assert {"sparrow_core", "sparrow_core.sim", "sparrow_runtime"} <= set(modules) == set(pages)
    for module in modules:
        names = public_names(module)
        assert names, module
        missing = [name for name in names if f'id="{module}.{name}"' not in pages[module]]
        assert not missing, f"{module}: no entry for {missing}"
    # the stubs' types and the Cython source's text, together
    core = pages["sparrow_core"]
    entry = core[core.index('id="sparrow_core.sample_batch"') :][:6000]
    assert "Int64Array" in entry and "Batch sampling" in entry
    assert 'id="sparrow_core.Rng.__doc__"' not in core  # no inspected dunders


URL_ATTRIBUTE = re.compile(r"<(?:script|link|img|iframe|source|audio|video|embed)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"")
CSS_URL = re.compile(r"(?:url\(\s*['\"]?|@import\s+['\"])([^'\")]+)")


def test_no_page_or_stylesheet_of_the_site_names_a_resource_on_the_internet(site):
    """Every script, stylesheet, image and font the built pages and CSS load is a file of the site."""
    remote = []
    for path in site.rglob("*"):
        if path.suffix == ".html":
            urls = URL_ATTRIBUTE.findall(path.read_text())
        elif path.suffix == ".css":
            urls = CSS_URL.findall(path.read_text())
        else:
            continue
        remote += [(path.relative_to(site), url) for url in urls if re.match(r"(?i)([a-z]+:)?//", url)]
    assert not remote, remote[:10]


@pytest.fixture
def served(site) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass


@pytest.fixture
def chromium() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium: CI must install it (apt-get install chromium)")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return path


@pytest.mark.timeout(120)
def test_the_site_in_a_browser_shows_its_pages_searches_offline_and_loads_only_its_own_files(
    chromium, served, tmp_path
):
    """Headless Chromium opens the entry page and an API page, finds a class by search, and asks for no URL
    outside the site."""
    shots = Path(os.environ.get("SPARROW_SCREENSHOT_DIR") or tmp_path)
    browser = Browser(chromium, tmp_path / "profile")
    try:
        browser.navigate(served)
        browser.wait_for("document.readyState === 'complete' && document.querySelector('h1') !== null")
        assert browser.evaluate("document.querySelector('article h1').firstChild.textContent.trim()") == "sparrow-core"
        nav = browser.evaluate("[...document.querySelectorAll('.md-nav__link')].map(a => a.innerText.trim())")
        # the API pages sit under Reference > API reference: the entry page's nav shows both sections
        assert {"Getting started", "Reference", "API reference"} <= set(nav), nav
        browser.screenshot(shots / "docs-site.png")

        # search runs in the page on the site's own index
        browser.evaluate(
            "(() => { const q = document.querySelector('input.md-search__input'); q.focus();"
            " q.value = 'SparrowExecutor'; q.dispatchEvent(new Event('input', {bubbles: true})); })()"
        )
        hits = browser.wait_for(
            "[...document.querySelectorAll('.md-search-result__item a')].map(a => a.getAttribute('href'))"
        )
        assert any("api/sparrow_runtime/" in hit for hit in hits), hits

        browser.navigate(served + "api/sparrow_core/#sparrow_core.sample_batch")
        browser.wait_for(
            "document.readyState === 'complete' && document.getElementById('sparrow_core.sample_batch') !== null"
        )
        entry = browser.evaluate("document.getElementById('sparrow_core.sample_batch').parentElement.innerText")
        assert "probe_ratio: float" in entry and "Batch sampling" in entry, entry  # the stub's types, the .pyx's text
        browser.screenshot(shots / "docs-site-api.png")
    finally:
        browser.close()
    outside = [url for url in browser.requests if not url.startswith((served, "data:", "blob:", "about:"))]
    assert browser.requests and not outside, outside
