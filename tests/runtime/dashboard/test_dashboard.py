"""The dashboard without a browser: the Activity observer, the Sampler's views (on a fake clock), the
server-rendered page and charts, and the WSGI app's routes and headers."""

from __future__ import annotations

import io
import json
import re
import wsgiref.util

import numpy as np
import pytest
import trio

from sparrow_runtime.dashboard import DashboardApp, Sampler
from sparrow_runtime.dashboard.activity import LOST_MEMORY, PENDING_LIMIT, Quantiles
from sparrow_runtime.dashboard.charts import Series, line_chart, nice_axis
from sparrow_runtime.dashboard.page import render_page, seconds
from sparrow_runtime.services.metrics import MeteredSchedulerLogic
from sparrow_runtime.wire.messages import (
    GetTask,
    Heartbeat,
    Outcome,
    OutcomeToScheduler,
    RegisterNodeMonitor,
    SubmitJob,
    TaskToNode,
)

from ..manual_clock import ManualClock


class Peer:
    """Stands for a Connection: the dashboard shows its `peer_name`."""

    def __init__(self, name: str) -> None:
        self.peer_name = name


def cluster(clock: ManualClock, nodes: int = 2) -> tuple[MeteredSchedulerLogic, Sampler, list[Peer]]:
    logic = MeteredSchedulerLogic(None, scheduler_id="sched-1", seed=1, clock=clock, bind_idle=False)
    sampler = Sampler(logic, seed=1)
    peers = [Peer(f"10.0.0.{i}:5000") for i in range(nodes)]
    for i, peer in enumerate(peers):
        logic.on_node_messages(peer, [RegisterNodeMonitor(f"nm-{i}", 2, ("gpu",) if i == 0 else ())])
    return logic, sampler, peers


def run_job(logic: MeteredSchedulerLogic, clock: ManualClock, peer: Peer, ref: int, tasks: int, *, delay: float):
    """Submit a job, launch all its tasks on `peer` after `delay` s, finish them 1 s later."""
    logic.on_client_messages("client", [SubmitJob(ref, [b"t"] * tasks)])
    job_id = max(logic.jobs)
    clock.now += delay
    out = logic.on_node_messages(peer, [GetTask(job_id)] * tasks)
    launched = [m.task for _, m in out if type(m) is TaskToNode]
    clock.now += 1.0
    logic.on_node_messages(peer, [OutcomeToScheduler(job_id, t, Outcome(True, b"", "")) for t in launched])
    return len(launched)


def test_quantiles_cover_the_window_and_forget_older_seconds():
    quantiles = Quantiles(window=3, cap=100, rng=np.random.default_rng(1))
    quantiles.add([1.0] * 99 + [50.0])
    assert quantiles.roll() == (1.0, pytest.approx(1.49))  # numpy's linear interpolation
    quantiles = Quantiles(window=3, cap=100, rng=np.random.default_rng(1))
    quantiles.add([1.0] * 100)
    assert quantiles.roll() == (1.0, 1.0)
    quantiles.add([3.0] * 100)
    assert quantiles.roll()[0] == 2.0  # 1s and 3s half and half
    assert quantiles.roll()[0] == 2.0  # a quiet second: the window still holds both
    assert quantiles.roll() == (3.0, 3.0)  # the first second left the window
    assert quantiles.roll() == (None, None)  # nothing observed within the window


def test_a_busy_second_is_sampled_down_to_the_cap_without_bias():
    """100,000 values 0..1 in one second, 1,000 kept: the quantiles stay where they were."""
    quantiles = Quantiles(window=10, cap=1000, rng=np.random.default_rng(2))
    values = np.random.default_rng(3).random(100_000)
    for start in range(0, len(values), 250):
        quantiles.add(values[start : start + 250].tolist())
    p50, p99 = quantiles.roll()
    assert len(quantiles._past[-1]) == 1000
    assert abs(p50 - 0.5) < 0.05 and abs(p99 - 0.99) < 0.01


def test_values_never_rolled_stay_bounded():
    """No sampler rolls them (a logic made with a Sampler that never runs): memory stays bounded."""
    quantiles = Quantiles(window=10, cap=1000, rng=np.random.default_rng(2))
    for _ in range(100):
        quantiles.add([0.001] * 10_000)
    assert len(quantiles.current) <= PENDING_LIMIT


def test_sample_shows_node_monitors_jobs_counters_and_rates():
    clock = ManualClock(1000.0)
    logic, sampler, peers = cluster(clock)
    logic.on_node_messages(peers[1], [Heartbeat(queued=4, busy=1)])
    logic.on_client_messages("client", [SubmitJob(1, [b"a", b"b", b"c"])])  # stays in flight
    clock.now += 1.0
    view = sampler.sample()
    assert [(n.node_id, n.address, n.state, n.slots, n.busy, n.queued, n.labels) for n in view.nodes] == [
        ("nm-0", "10.0.0.0:5000", "up", 2, 0, 0, ("gpu",)),
        ("nm-1", "10.0.0.1:5000", "up", 2, 1, 4, ()),
    ]
    assert view.jobs_in_flight == 1 and [(j.tasks, j.launched, j.done) for j in view.jobs] == [(3, 0, 0)]
    assert view.counters["probes"] == 6 and view.counters["jobs_submitted"] == 1
    launched = run_job(logic, clock, peers[0], ref=2, tasks=2, delay=0.25)  # 1.25 s of clock pass
    clock.now += 0.75
    view = sampler.sample()
    assert launched == 2
    last = view.points[-1]
    assert (last.tasks_per_s, last.launched_per_s) == (1.0, 1.0)  # 2 outcomes, 2 launches in 2 s
    assert (last.delay_p50, last.response_p50) == (0.25, 1.25)
    assert (view.counters["tasks_finished"], view.counters["jobs_finished"], view.uptime) == (2, 1, 3.0)
    assert view.jobs_in_flight == 1 and len(view.points) == 2


def test_draining_and_lost_node_monitors_keep_their_rows_until_lost_ones_are_forgotten():
    clock = ManualClock(1000.0)
    logic, sampler, peers = cluster(clock, nodes=3)
    logic.on_node_messages(peers[1], [Heartbeat(queued=0, busy=0, draining=True)])
    logic.on_node_lost(peers[2])
    clock.now += 30
    states = {n.node_id: (n.state, n.address, n.silent_for) for n in sampler.sample().nodes}
    assert states["nm-1"][0] == "draining"
    assert states["nm-2"] == ("lost", "10.0.0.2:5000", 30.0)
    assert sampler.view.counters["node_monitors_lost"] == 1
    clock.now += LOST_MEMORY
    assert [n.node_id for n in sampler.sample().nodes] == ["nm-0", "nm-1"]


def test_a_lost_node_monitor_that_registers_again_is_up():
    clock = ManualClock(1000.0)
    logic, sampler, peers = cluster(clock)
    logic.on_node_lost(peers[0])
    assert [n.state for n in sampler.sample().nodes] == ["up", "lost"]
    logic.on_node_messages(Peer("10.0.0.9:6000"), [RegisterNodeMonitor("nm-0", 2)])
    nodes = sampler.sample().nodes
    assert [(n.node_id, n.state, n.address) for n in nodes] == [
        ("nm-1", "up", "10.0.0.1:5000"),
        ("nm-0", "up", "10.0.0.9:6000"),
    ]


def test_history_is_bounded_and_the_sampler_runs_once_an_interval(autojump_clock):
    async def main():
        logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, clock=trio.current_time, bind_idle=False)
        sampler = Sampler(logic, interval=1.0, history=5)
        with trio.move_on_after(12.5):
            await sampler.run()
        return sampler.view

    view = trio.run(main, clock=autojump_clock)
    assert [p.t for p in view.points] == [8.0, 9.0, 10.0, 11.0, 12.0] and view.history == 5.0


def test_sampler_alongside_a_service_reports_its_address_and_samples_beside_it(autojump_clock):
    async def service(*, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started(("127.0.0.1", 7077))
        await trio.sleep(3.5)

    async def main():
        logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, clock=trio.current_time, bind_idle=False)
        sampler = Sampler(logic)
        async with trio.open_nursery() as nursery:
            assert await nursery.start(sampler.alongside(service)) == ("127.0.0.1", 7077)
        return sampler.view, trio.current_time()

    view, ended = trio.run(main, clock=autojump_clock)
    assert [p.t for p in view.points] == [1.0, 2.0, 3.0] and ended == 3.5  # stopped with the service


def test_bad_sampler_settings_are_refused():
    logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, bind_idle=False)
    with pytest.raises(ValueError, match="interval"):
        Sampler(logic, interval=0)
    with pytest.raises(ValueError, match="history"):
        Sampler(logic, history=1)


def test_page_escapes_what_peers_chose():
    """Node ids, labels and the scheduler id come from peers: they are shown as text, never as markup."""
    clock = ManualClock(1000.0)
    logic = MeteredSchedulerLogic(None, scheduler_id="<b>s</b>", seed=1, clock=clock, bind_idle=False)
    sampler = Sampler(logic)
    logic.on_node_messages(Peer("x"), [RegisterNodeMonitor("<script>alert(1)</script>", 1, ('"><img src=x>',))])
    html = render_page(sampler.sample())
    assert "<script>alert" not in html and "<img src=x>" not in html and "<b>s</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;s&lt;/b&gt;" in html


def test_chart_draws_each_series_and_breaks_lines_where_values_are_missing():
    svg = line_chart(
        "delay",
        [4.0, 3.0, 2.0, 1.0, 0.0],
        [Series("p50", "s1", [0.002, 0.004, None, 0.003, 0.001])],
        span=60,
        fmt=seconds,
    )
    path = re.search(r'<path class="line s1" d="([^"]+)"', svg).group(1)
    assert path.count("M") == 2 and path.count("L") == 2  # two runs: 2 points, then 2 points
    assert 'data-points="4"' in svg and ">4 ms<" in svg and ">1 ms<" in svg  # the y axis: 0 to 4 ms, by 1 ms
    empty = line_chart("delay", [], [Series("p50", "s1", [])], span=60, fmt=seconds)
    assert 'data-points="0"' in empty and "<path" not in empty


@pytest.mark.parametrize(
    ("value", "axis"),
    [
        (0.0, (1.0, 5)),
        (0.8, (0.8, 4)),
        (3.2, (4.0, 4)),
        (11, (20.0, 4)),
        (2.5, (2.5, 5)),
        (0.0042, (0.005, 5)),
        (180, (200.0, 4)),
        (90, (100.0, 5)),
        (6.1, (8.0, 4)),
    ],
)
def test_y_axis_tops_at_a_round_number_cut_in_round_steps(value, axis):
    top, steps = nice_axis(value)
    assert (top, steps) == (pytest.approx(axis[0]), axis[1])


def call(app: DashboardApp, path: str, method: str = "GET") -> tuple[str, dict[str, str], bytes]:
    environ = {"PATH_INFO": path, "REQUEST_METHOD": method, "wsgi.input": io.BytesIO()}
    wsgiref.util.setup_testing_defaults(environ)
    answer = {}

    def start_response(status, headers):
        answer["status"], answer["headers"] = status, dict(headers)

    body = b"".join(app(environ, start_response))
    return answer["status"], answer["headers"], body


def test_app_serves_the_page_its_live_part_json_and_assets_read_only():
    clock = ManualClock(1000.0)
    logic, sampler, peers = cluster(clock)
    run_job(logic, clock, peers[0], ref=1, tasks=2, delay=0.1)
    logic.on_client_messages("client", [SubmitJob(2, [b"t"] * 3)])  # in flight
    sampler.sample()
    app = DashboardApp(sampler)
    status, headers, page = call(app, "/")
    assert status == "200 OK" and headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"] and headers["Cache-Control"] == "no-store"
    assert b'src="static/dashboard.js"' in page and b'href="static/dashboard.css"' in page
    assert page.count(b'<tr class="node"') == 2 and b"<script>" not in page  # no inline script (CSP)
    assert call(app, "/live")[2] in page
    data = json.loads(call(app, "/dashboard.json")[2])
    assert data["counters"]["tasks_finished"] == 2 and [n["node_id"] for n in data["nodes"]] == ["nm-0", "nm-1"]
    assert data["jobs"][0]["tasks"] == 3 and data["points"][-1]["jobs_in_flight"] == 1
    for name, kind in (("dashboard.css", "text/css"), ("dashboard.js", "text/javascript")):
        status, headers, body = call(app, f"/static/{name}")
        assert status == "200 OK" and headers["Content-Type"].startswith(kind) and len(body) > 500
    assert call(app, "/static/../app.py")[0] == "404 Not Found"
    assert call(app, "/nothing")[0] == "404 Not Found"
    status, headers, _ = call(app, "/", method="POST")
    assert status == "405 Method Not Allowed" and headers["Allow"] == "GET, HEAD"
    status, headers, body = call(app, "/", method="HEAD")
    assert status == "200 OK" and body == b"" and int(headers["Content-Length"]) == len(page)


def test_app_renders_a_view_once_for_all_viewers():
    clock = ManualClock(1000.0)
    _, sampler, _ = cluster(clock)
    app = DashboardApp(sampler)
    first = call(app, "/live")[2]
    assert call(app, "/live")[2] == first and app._cache["live"] == (sampler.view, first)
    clock.now += 5
    sampler.sample()
    assert call(app, "/live")[2] != first and app._cache["live"][0] is sampler.view


def test_a_failing_sample_is_logged_and_skipped_and_the_sampler_goes_on(autojump_clock, caplog, monkeypatch):
    """A bug in the dashboard never stops the scheduler: 30 failing samples, one log line a minute."""

    async def main():
        logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, clock=trio.current_time, bind_idle=False)
        sampler = Sampler(logic)
        calls = []

        def broken_status():
            calls.append(trio.current_time())
            raise ZeroDivisionError("a bug")

        monkeypatch.setattr(logic, "status", broken_status)
        with trio.move_on_after(90.5):
            await sampler.run()
        return calls, sampler.view

    calls, view = trio.run(main, clock=autojump_clock)
    assert len(calls) == 90 and view.points == ()  # it kept trying, every second; the first view stays
    failures = [r for r in caplog.records if r.name == "sparrow_runtime.dashboard.sampler"]
    assert len(failures) == 2 and "ZeroDivisionError: a bug" in caplog.text  # at 1 s and at 61 s
