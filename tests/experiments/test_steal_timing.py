"""Reading a run's steal timing from its node monitors' metrics pages (sparrow_experiments.steal_timing): counters are
summed over the pages, a page that cannot be read is counted and left out, and the model's wait is what the
runtime's steals took beyond the model's four hops."""

import os
from pathlib import Path

import pytest

from sparrow_experiments.steal_timing import StealTiming, node_metrics, parse_counters, read_steal_timing

PAGE = """# HELP sparrow_node_steal_attempts_total Work-stealing attempts started while idle (--steal)
# TYPE sparrow_node_steal_attempts_total counter
sparrow_node_steal_attempts_total {attempts}
sparrow_node_steal_wake_microseconds_total {wake}
sparrow_node_steal_probe_microseconds_total {probe}
sparrow_node_steal_probe_rounds_total {probes}
sparrow_node_steal_take_microseconds_total {take}
sparrow_node_steal_take_rounds_total {takes}
sparrow_node_tasks_launched_total 99.0
"""


def page(tmp_path: Path, name: str, **values: float) -> str:
    path = tmp_path / name
    path.write_text(PAGE.format(**values))
    return path.as_uri()


def test_the_steal_counters_are_summed_over_the_node_monitors(tmp_path: Path) -> None:
    """Two pages (4 + 6 attempts, 10 ms of waits, 8 probe rounds of 20 ms, 4 takes of 4 ms) and one missing:
    means per attempt, per probe round and per take; the missing one is counted as unread."""
    urls = [
        page(tmp_path, "a", attempts=4, wake=4000, probe=60000, probes=3, take=6000, takes=2),
        page(tmp_path, "b", attempts=6, wake=6000, probe=100000, probes=5, take=10000, takes=2),
        (tmp_path / "gone").as_uri(),
    ]
    timing = read_steal_timing(urls)
    assert timing == StealTiming(attempts=10, wake=0.001, probe=0.02, take=0.004, unread=1)
    assert timing.model_wait(0.0015) == pytest.approx(0.001 + (0.02 - 0.003) + (0.004 - 0.003))
    assert timing.model_wait(0.01) == pytest.approx(0.001)  # round trips within the model's hops add nothing
    # the take (4 ms) under the model's two hops (6 ms) saves 2 ms of the probe's 20 - 6 ms: the attempt's whole
    # time, wake + probe + take, is the model's wait + four hops
    assert timing.model_wait(0.003) == pytest.approx(0.001 + 0.02 + 0.004 - 4 * 0.003)
    assert "10 attempts" in timing.describe(0.0015) and "1 node monitors unread" in timing.describe(0.0015)


def test_no_readable_page_gives_no_timing(tmp_path: Path) -> None:
    """Only pages that cannot be read, or that hold no steal counter (a scheduler's): None."""
    scheduler = tmp_path / "scheduler"
    scheduler.write_text("sparrow_scheduler_jobs_total 3.0\n")
    assert read_steal_timing([(tmp_path / "gone").as_uri(), scheduler.as_uri()]) is None
    assert parse_counters(scheduler.read_text()) == {}


def test_node_metrics_sets_the_port_only_while_open_and_only_if_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside, SPARROW_METRICS_PORT is 0 (a free port per service); after, it is gone again; a value the user
    set is kept."""
    monkeypatch.delenv("SPARROW_METRICS_PORT", raising=False)
    with node_metrics():
        assert os.environ["SPARROW_METRICS_PORT"] == "0"
    assert "SPARROW_METRICS_PORT" not in os.environ
    monkeypatch.setenv("SPARROW_METRICS_PORT", "9100")
    with node_metrics():
        assert os.environ["SPARROW_METRICS_PORT"] == "9100"
    assert os.environ["SPARROW_METRICS_PORT"] == "9100"
