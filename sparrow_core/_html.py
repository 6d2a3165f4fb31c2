"""The small HTML of the notebook views (`_repr_html_`): a titled card of facts and tables, every value
escaped, styles inline (a notebook loads nothing else), and the plain one-line `__repr__` beside it.
Used by sparrow_core.sim's views and sparrow_runtime.views."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

_CARD = "font-family:sans-serif;font-size:13px;border:1px solid #ccc;border-radius:4px;padding:6px 10px;max-width:60em"
_TH = "text-align:left;padding:2px 8px 2px 0;font-weight:600"
_TD = "text-align:left;padding:2px 8px 2px 0"


def escape(value: object) -> str:
    """`value` as text, safe inside an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


def link(url: str, text: str | None = None) -> str:
    """A link that opens in a new tab (notebooks), for http(s) URLs only; other text is shown, not linked."""
    if not url.startswith(("http://", "https://")):
        return escape(text or url)
    return f'<a href="{escape(url)}" target="_blank" rel="noopener">{escape(text or url)}</a>'


def table(header: Sequence[str], rows: Iterable[Sequence[object]], *, raw: bool = False) -> str:
    """A table; cells are escaped unless `raw` (cells already HTML, as from link())."""
    cell = (lambda v: str(v)) if raw else escape
    head = "".join(f'<th style="{_TH}">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{_TD}">{cell(v)}</td>' for v in row) + "</tr>" for row in rows)
    return f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def card(title: str, facts: Sequence[tuple[str, str]], *parts: str) -> str:
    """A titled box: `facts` (label, HTML value: escape() or link() it first) as a list, then `parts`."""
    items = "".join(f'<tr><th style="{_TH}">{escape(k)}</th><td style="{_TD}">{v}</td></tr>' for k, v in facts)
    heading = f'<div style="font-weight:700;margin-bottom:4px">{escape(title)}</div>'
    rest = f'<table style="border-collapse:collapse">{items}</table>{"".join(parts)}'
    return f'<div class="sparrow-view" style="{_CARD}">{heading}{rest}</div>'


def plain(name: str, **fields: object) -> str:
    """`<name key=value ...>`, the one-line repr of an object shown by a view."""
    return "<" + " ".join([name, *(f"{k}={v}" for k, v in fields.items())]) + ">"


def number(value: float, digits: int = 3) -> str:
    """A float shown with `digits` significant digits."""
    return f"{value:.{digits}g}"
