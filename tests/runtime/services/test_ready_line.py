"""The ready line a service prints once it serves, and its reading by whoever started the service."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.ready_line import parse_ready_line, ready_line


def test_a_ready_line_reads_back_as_its_address_and_urls():
    """What `sparrow scheduler` prints, with and without metrics and dashboard, parses to the same parts."""
    line = ready_line("scheduler", ("127.0.0.1", 7077), "http://127.0.0.1:9477/metrics", "http://127.0.0.1:9477/")
    assert line == (
        "sparrow scheduler: listening on 127.0.0.1:7077, metrics on http://127.0.0.1:9477/metrics,"
        " dashboard on http://127.0.0.1:9477/"
    )
    assert parse_ready_line(line + "\n") == (
        "127.0.0.1:7077",
        "http://127.0.0.1:9477/metrics",
        "http://127.0.0.1:9477/",
    )
    assert parse_ready_line(ready_line("node-monitor", ("::1", 7078))) == ("[::1]:7078", None, None)


@pytest.mark.parametrize(
    "line",
    ["", "sparrow scheduler: starting", "error: port 7077 is in use", "sparrow scheduler: listening on a:1 and more"],
)
def test_other_lines_are_not_ready_lines(line):
    """A line that is not the ready line (an error, a log line, trailing text) reads as None."""
    assert parse_ready_line(line) is None
