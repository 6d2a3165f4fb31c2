"""The dashboard as a person sees it: a LocalCluster runs jobs, headless Chromium (the system's
package, driven over the DevTools protocol) loads the page, and it shows the node monitors' rows,
charts with data, and counters that go up on their own as more jobs run; then the scheduler stops
and the page says so. A screenshot is saved (SPARROW_SCREENSHOT_DIR, else the test's tmp dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparrow_runtime import NodeMonitorConfig
from sparrow_runtime.client.executor import SparrowExecutor
from sparrow_runtime.services.local_cluster import LocalCluster

from ..headless_chromium import HeadlessChromium, find_chromium

CHROMIUM = find_chromium()


def square(x: int) -> int:
    return x * x


def run_jobs(cluster: LocalCluster, jobs: int, tasks: int) -> None:
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor:
        for _ in range(jobs):
            assert list(executor.map(square, range(tasks))) == [x * x for x in range(tasks)]


def counter(browser: HeadlessChromium, key: str) -> int:
    return browser.evaluate(f"Number(document.getElementById('count-{key}').dataset.value)")


@pytest.fixture
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium: CI must install it (apt-get install chromium)")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return CHROMIUM


@pytest.mark.timeout(90)
def test_dashboard_in_a_browser_shows_nodes_charts_and_live_counters(chromium, tmp_path):
    with (
        LocalCluster(1, 2, 2, node_monitor=NodeMonitorConfig(executor="thread")) as cluster,
        HeadlessChromium(chromium) as browser,
    ):
        assert cluster.dashboard_url.startswith("http://127.0.0.1:")  # loopback only
        run_jobs(cluster, jobs=5, tasks=20)
        browser.goto(cluster.dashboard_url)
        assert browser.evaluate("document.title") == "Sparrow scheduler scheduler-0"

        # the node monitors' rows: ids, state, a loopback address, their slots
        rows = browser.wait_for(
            "document.querySelectorAll('tr.node').length === 2 && "
            "[...document.querySelectorAll('tr.node')].map(r => [...r.cells].map(c => c.innerText))"
        )
        assert sorted(row[0] for row in rows) == ["nm-0", "nm-1"]  # (they register concurrently)
        # the address a link comes from: loopback TCP's, or a Unix socket's (LocalCluster's default) "unix peer"
        from_here = ("127.0.0.1:", "unix peer")
        assert all(row[1].startswith(from_here) and row[2] == "up" and row[3] == "2" for row in rows), rows

        # numbers: the first jobs are counted (the page refreshes itself each second until they are)
        browser.wait_for("Number(document.getElementById('count-jobs_finished').dataset.value) === 5")
        assert counter(browser, "tasks_launched") == counter(browser, "tasks_finished") == 100
        assert counter(browser, "probes") == 200  # batch sampling, probe ratio 2

        # charts with data: points drawn, a line through them, a delay with a unit on its axis
        browser.wait_for("document.querySelector('#chart-throughput svg').dataset.points > 0")
        assert browser.evaluate("document.querySelectorAll('#chart-throughput path.line').length") >= 1
        browser.wait_for("document.querySelector('#chart-delay svg').dataset.points > 0")
        delay = browser.evaluate("document.querySelector('#tile-delay .value').innerText")
        assert delay.endswith(("µs", "ms", " s")), delay

        # more jobs: the open page's numbers go up with no reload
        browser.evaluate("window.notReloaded = true")
        run_jobs(cluster, jobs=3, tasks=30)
        browser.wait_for("Number(document.getElementById('count-tasks_finished').dataset.value) === 190")
        assert counter(browser, "jobs_finished") == 8 and browser.evaluate("window.notReloaded") is True
        assert browser.evaluate("document.getElementById('connection').innerText") == "live"

        screenshot = Path(os.environ.get("SPARROW_SCREENSHOT_DIR") or tmp_path) / "dashboard.png"
        browser.screenshot(str(screenshot))
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 30_000

        # the scheduler stops: the page says it cannot reach it, and keeps the last numbers it had
        cluster.close()
        browser.wait_for("document.getElementById('connection').classList.contains('offline')")
        assert "unreachable" in browser.evaluate("document.getElementById('connection').innerText")
        assert counter(browser, "tasks_finished") == 190
