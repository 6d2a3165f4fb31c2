"""Line charts drawn as plain SVG on the server, for the dashboard: no script, no library, nothing
fetched. A chart plots a few series against "seconds ago"; a missing value (None) breaks its line."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 28  # margins around the plot area


class Series:
    """One line: its legend `label`, a CSS class naming its colour, and one value (or None) per time."""

    __slots__ = ("css", "label", "values")

    def __init__(self, label: str, css: str, values: Sequence[float | None]) -> None:
        self.label = label
        self.css = css
        self.values = values


# (top of the y axis / 10^k, grid steps up to it): every step a round number
AXES = ((1.0, 5), (2.0, 4), (2.5, 5), (4.0, 4), (5.0, 5), (8.0, 4), (10.0, 5))


def nice_axis(value: float) -> tuple[float, int]:
    """The y axis for data up to `value`: a round top >= value and how many grid steps divide it into
    round numbers (top 250: 5 steps of 50; top 40: 4 of 10)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0, 5
    power = 10.0 ** math.floor(math.log10(value))
    for top, steps in AXES:
        if value <= top * power * (1 + 1e-9):
            return top * power, steps
    return 10.0 * power, 5


def line_chart(
    title: str,
    ages: Sequence[float],
    series: Sequence[Series],
    *,
    span: float,
    fmt: Callable[[float], str],
) -> str:
    """An SVG chart of `series` against `ages` (seconds before now, one per value), over the last
    `span` seconds; `fmt` writes a y-axis value. The element carries `data-points`: the values drawn."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    drawn = [v for s in series for v in s.values if v is not None]
    top, steps = nice_axis(max(drawn, default=0.0))

    def x(age: float) -> float:
        return LEFT + plot_w * (1 - min(age, span) / span)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top)

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'data-points="{len(drawn)}">'
    ]
    for i in range(steps + 1):
        value = top * i / steps
        gy = y(value)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
        label = escape(fmt(value))
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end">{label}</text>')
    for age in _time_ticks(span):
        label = "now" if age == 0 else f"-{_duration(age)}"
        parts.append(f'<text class="tick" x="{x(age):.1f}" y="{HEIGHT - 8}" text-anchor="middle">{label}</text>')
    for s in reversed(series):  # the first series is drawn last: on top
        path = _path(ages, s.values, x, y, span)
        if path:
            parts.append(f'<path class="line {escape(s.css)}" d="{path}"><title>{escape(s.label)}</title></path>')
    parts.append("</svg>")
    return "".join(parts)


def legend(series: Sequence[Series]) -> str:
    """The chart's legend as HTML: a colour swatch and a label per series."""
    items = "".join(f'<li><span class="swatch {escape(s.css)}"></span>{escape(s.label)}</li>' for s in series)
    return f'<ul class="legend">{items}</ul>'


def _path(
    ages: Sequence[float],
    values: Sequence[float | None],
    x: Callable[[float], float],
    y: Callable[[float], float],
    span: float,
) -> str:
    """An SVG path through the values, broken where one is missing; a lone point is a dot (a
    zero-length segment drawn with round caps)."""
    out: list[str] = []
    pen_down = False
    for age, value in zip(ages, values, strict=True):
        if value is None or age > span:
            pen_down = False
            continue
        point = f"{x(age):.1f} {y(value):.1f}"
        out.append(("L" if pen_down else "M") + point)
        if not pen_down:
            out.append("l0 0")
        pen_down = True
    return " ".join(out)


def _time_ticks(span: float) -> list[float]:
    """Ages to label on the x axis: now, and a few round steps back."""
    for step in (10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 5:
            break
    return [float(a) for a in range(0, int(span) + 1, step)]


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"
