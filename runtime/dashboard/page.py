"""The dashboard's HTML, rendered on the server from a View: the whole page, and the live part the
page's script fetches again every second (`live`). Every string that comes from a peer (node ids,
labels, users, the scheduler id) is escaped."""

from __future__ import annotations

import math
from html import escape

from .charts import Series, legend, line_chart
from .view import View

REFRESH_MS = 1000  # how often the page's script fetches the live part

# counter key -> (label, what it means), in the order shown
COUNTERS = {
    "jobs_submitted": ("jobs submitted", "jobs received from clients"),
    "jobs_finished": ("jobs finished", "jobs whose every task has an outcome"),
    "jobs_rejected": ("jobs rejected", "jobs refused as invalid"),
    "tasks_submitted": ("tasks submitted", "tasks in the jobs accepted"),
    "tasks_launched": ("tasks launched", "tasks handed to a node monitor"),
    "tasks_finished": ("tasks finished", "tasks that returned a value"),
    "tasks_failed": ("tasks failed", "tasks that raised, or whose worker or node monitor was lost"),
    "probes": ("probes sent", "reservations placed on node monitors (batch sampling)"),
    "reprobes": ("re-probes", "jobs probed again after their reservations ran out"),
    "get_task": ("GetTask answered", "node monitors asking for a task (late binding)"),
    "get_task_empty": ("empty GetTask answers", "asked too late: the job had no task left"),
    "cancellations": ("cancellations sent", "CancelReservations for a job's leftover reservations"),
    "node_monitors_lost": ("node monitors lost", "links that broke or went silent"),
}


def seconds(value: float | None) -> str:
    """A duration for people: microseconds to seconds, three significant digits at most."""
    if value is None:
        return "–"
    if value < 0.001:
        return f"{value * 1e6:.3g} µs" if value > 0 else "0 ms"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def ago(value: float) -> str:
    if value < 1:
        return "just now"
    if value < 120:
        return f"{value:.0f} s ago"
    return f"{value / 60:.0f} min ago"


def render_page(view: View) -> str:
    """The whole page: a frame, and the live part inside it."""
    title = f"Sparrow scheduler {view.scheduler_id}"
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="stylesheet" href="static/dashboard.css">
<script src="static/dashboard.js" defer></script>
<noscript><meta http-equiv="refresh" content="{REFRESH_MS // 1000 + 1}"></noscript>
</head>
<body data-refresh-ms="{REFRESH_MS}">
<header>
<h1><span class="brand">Sparrow</span> scheduler <code>{escape(view.scheduler_id)}</code></h1>
<p id="connection" class="connection live" role="status">live</p>
</header>
<main id="live">
{render_live(view)}
</main>
<footer>Read-only. Refreshed every {REFRESH_MS / 1000:g} s.
The same data as JSON: <a href="dashboard.json">dashboard.json</a>.
{
        'Prometheus metrics: <a href="metrics">metrics</a>.'
        if view.metrics
        else "Prometheus metrics need the prometheus-client package."
    }</footer>
</body>
</html>
"""


def render_live(view: View) -> str:
    """The part of the page that changes: tiles, charts, node monitors, jobs, counters."""
    return "\n".join([_tiles(view), _charts(view), _nodes(view), _jobs(view), _counters(view)])


def _tiles(view: View) -> str:
    states = {state: sum(1 for n in view.nodes if n.state == state) for state in ("up", "draining", "lost")}
    live_nodes = [n for n in view.nodes if n.state != "lost"]
    slots, busy = sum(n.slots for n in live_nodes), sum(n.busy for n in live_nodes)
    last = view.points[-1] if view.points else None
    detail = ", ".join(f"{v} {k}" for k, v in states.items() if v and k != "up") or "all up"
    tiles = [
        ("node-monitors", "node monitors", f"{states['up'] + states['draining']}", detail),
        ("slots", "slots busy", f"{busy:,} / {slots:,}", f"{view.counters['tasks_launched']:,} tasks launched"),
        ("jobs", "jobs in flight", f"{view.jobs_in_flight:,}", f"{view.counters['jobs_finished']:,} finished"),
        ("throughput", "tasks / s", count(last.tasks_per_s) if last else "–", "outcomes in the last second"),
        (
            "delay",
            "scheduling delay p50",
            seconds(last.delay_p50 if last else None),
            f"p99 {seconds(last.delay_p99 if last else None)}",
        ),
        (
            "response",
            "job response p50",
            seconds(last.response_p50 if last else None),
            f"p99 {seconds(last.response_p99 if last else None)}",
        ),
    ]
    cells = "".join(
        f'<div class="tile" id="tile-{key}"><div class="label">{label}</div>'
        f'<div class="value">{escape(value)}</div><div class="detail">{escape(sub)}</div></div>'
        for key, label, value, sub in tiles
    )
    return f'<section class="tiles" aria-label="summary">{cells}</section>'


def _charts(view: View) -> str:
    points = view.points
    ages = [view.taken_at - p.t for p in points]
    span = min(view.history, max(60.0, math.ceil(view.uptime / 60) * 60))  # grows to the history kept
    window = f"{view.window:g} s"
    charts = [
        (
            "throughput",
            "Task throughput",
            "tasks per second, each second",
            [
                Series("finished", "s1", [p.tasks_per_s for p in points]),
                Series("launched", "s2", [p.launched_per_s for p in points]),
            ],
            count,
        ),
        (
            "delay",
            "Scheduling delay",
            f"job arrival to task launch; over the last {window}",
            [
                Series("p50", "s1", [p.delay_p50 for p in points]),
                Series("p99", "s3", [p.delay_p99 for p in points]),
            ],
            seconds,
        ),
        (
            "response",
            "Job response time",
            f"job arrival to its last outcome; over the last {window}",
            [
                Series("p50", "s1", [p.response_p50 for p in points]),
                Series("p99", "s3", [p.response_p99 for p in points]),
            ],
            seconds,
        ),
        (
            "load",
            "Load",
            "each second",
            [
                Series("busy slots", "s1", [float(p.busy_slots) for p in points]),
                Series("jobs in flight", "s2", [float(p.jobs_in_flight) for p in points]),
            ],
            count,
        ),
    ]
    figures = "".join(
        f'<figure class="panel" id="chart-{key}"><figcaption><h2>{title}</h2><span class="note">{note}</span>'
        f"{legend(series)}</figcaption>{line_chart(title, ages, series, span=span, fmt=fmt)}</figure>"
        for key, title, note, series, fmt in charts
    )
    return f'<section class="charts">{figures}</section>'


def _nodes(view: View) -> str:
    rows = []
    for n in view.nodes:
        lost = n.state == "lost"
        labels = " ".join(f'<span class="label-tag">{escape(label)}</span>' for label in n.labels)
        rows.append(
            f'<tr class="node" data-node="{escape(n.node_id)}" data-state="{n.state}">'
            f"<td><code>{escape(n.node_id)}</code></td><td><code>{escape(n.address) or '–'}</code></td>"
            f'<td><span class="state {n.state}">{n.state}</span></td>'
            f'<td class="num">{"–" if lost else n.slots}</td>'
            f'<td class="num busy">{"–" if lost else n.busy}{"" if lost else _bar(n.busy, n.slots)}</td>'
            f'<td class="num">{"–" if lost else n.queued}</td>'
            f"<td>{('lost ' if lost else 'heard ') + ago(n.silent_for)}</td><td>{labels}</td></tr>"
        )
    columns = ["id", "address", "state", "#slots", "#busy", "#queued", "last message", "labels"]
    return _table("nodes", "Node monitors", columns, rows, "no node monitor has registered")


def _jobs(view: View) -> str:
    rows = [
        f'<tr class="job"><td class="num">{j.job_id}</td><td>{escape(j.user) or "–"}</td>'
        f'<td class="num">{j.priority}</td><td class="num">{j.tasks:,}</td><td class="num">{j.launched:,}</td>'
        f'<td class="num">{j.running:,}</td><td class="num">{j.done:,}{_bar(j.done, j.tasks)}</td></tr>'
        for j in view.jobs
    ]
    more = view.jobs_in_flight - len(view.jobs)
    if more > 0:
        rows.append(f'<tr><td colspan="7" class="empty">and {more:,} more</td></tr>')
    title = f'Jobs in flight <span class="note">{view.jobs_in_flight:,}, oldest first</span>'
    columns = ["#job", "user", "#priority", "#tasks", "#launched", "#running", "#done"]
    return _table("jobs", title, columns, rows, "no job in flight")


def _table(section: str, title: str, columns: list[str], rows: list[str], empty: str) -> str:
    """A panel with a table; a column name starting with # is numeric (aligned right)."""
    head = "".join(f'<th class="num">{c[1:]}</th>' if c.startswith("#") else f"<th>{c}</th>" for c in columns)
    body = "".join(rows) or f'<tr><td colspan="{len(columns)}" class="empty">{empty}</td></tr>'
    return (
        f'<section class="panel" id="{section}"><h2>{title}</h2><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def _counters(view: View) -> str:
    items = "".join(
        f'<div class="counter" title="{escape(meaning)}"><dt>{label}</dt>'
        f'<dd id="count-{key}" data-value="{view.counters[key]}">{view.counters[key]:,}</dd></div>'
        for key, (label, meaning) in COUNTERS.items()
    )
    return f'<section class="panel" id="counters"><h2>Protocol</h2><dl>{items}</dl></section>'


def _bar(part: int, whole: int) -> str:
    share = 0.0 if whole <= 0 else min(part / whole, 1.0)
    return (
        f'<svg class="bar" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true">'
        f'<rect class="track" width="100" height="6"/><rect class="fill" width="{share * 100:.1f}" height="6"/></svg>'
    )
