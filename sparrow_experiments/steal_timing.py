"""How long a run's steals took, read from its node monitors' metrics (services/steal.py's timing stats), to
set beside the delays the simulator assumes for them (four one-way hops of `network_delay` per attempt, and
no wait before it starts).

`node_metrics()` makes the node monitors a LocalCluster starts serve their metrics on loopback (a free
port each, SPARROW_METRICS_PORT=0, as docs/observability.md says); `read_steal_timing` sums their steal
counters. Error handling: a node monitor whose metrics cannot be read is left out (and counted), so the
figures are from the others; none readable gives None.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

METRICS_TIMEOUT = 5.0  # seconds per node monitor's metrics page
_KEYS = {
    "sparrow_node_steal_wake_microseconds_total": "wake_us",
    "sparrow_node_steal_probe_microseconds_total": "probe_us",
    "sparrow_node_steal_probe_rounds_total": "probes",
    "sparrow_node_steal_take_microseconds_total": "take_us",
    "sparrow_node_steal_take_rounds_total": "takes",
    "sparrow_node_steal_attempts_total": "attempts",
}


@dataclass(frozen=True)
class StealTiming:
    """Means over a run's attempts, in seconds; `unread`: node monitors whose metrics could not be read."""

    attempts: int
    wake: float  # from a reason to steal to the attempt's start
    probe: float  # probes sent -> last answer (StealProbe -> StealState)
    take: float  # StealTake -> Stolen
    unread: int = 0

    def model_wait(self, network: float) -> float:
        """The simulator's steal_wait for a run of one-way delay `network`: the wait before an attempt and what its
        two round trips take together beyond the model's four hops (all before the probes leave: an approximation),
        so that the model's attempt, from the slot's freeing to the stolen reservation's GetTask, takes as long as
        the run's. A round trip faster than the model's two hops shortens the wait by what it saves
        (clipping each round trip at the model's instead charges its thieves for time the run did not spend)."""
        return self.wake + max(0.0, self.probe + self.take - 4 * network)

    def describe(self, network: float) -> str:
        """One sentence: the measured times beside the model's (two one-way hops of `network` per round trip)."""
        return (
            f"{self.attempts:,} attempts: wait before an attempt {self.wake * 1e3:.2f} ms (model: 0), probe round "
            f"trip {self.probe * 1e3:.2f} ms and take round trip {self.take * 1e3:.2f} ms (model: "
            f"{2 * network * 1e3:.2f} ms each): the model's steal_wait {self.model_wait(network) * 1e3:.2f} ms"
            + (f"; {self.unread} node monitors unread" if self.unread else "")
        )


@contextmanager
def node_metrics() -> Iterator[None]:
    """While open, services started from here serve metrics on a free loopback port (unless set already)."""
    before = os.environ.get("SPARROW_METRICS_PORT")
    if before is None:
        os.environ["SPARROW_METRICS_PORT"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARROW_METRICS_PORT", None)


def parse_counters(text: str) -> dict[str, float]:
    """The steal counters (_KEYS) of one Prometheus text page, by short name."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        short = _KEYS.get(name)
        if short is not None:
            out[short] = out.get(short, 0.0) + float(value)
    return out


def read_steal_timing(urls: Iterable[str]) -> StealTiming | None:
    """The steal timing summed over the metrics pages at `urls` (module docstring)."""
    total: dict[str, float] = {}
    unread = read = 0
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=METRICS_TIMEOUT) as page:
                counters = parse_counters(page.read().decode())
        except (OSError, ValueError):
            unread += 1
            continue
        if counters:
            read += 1
            for key, value in counters.items():
                total[key] = total.get(key, 0.0) + value
    if not read:
        return None
    attempts = int(total.get("attempts", 0))
    return StealTiming(
        attempts=attempts,
        wake=total.get("wake_us", 0.0) / 1e6 / max(attempts, 1),
        probe=total.get("probe_us", 0.0) / 1e6 / max(total.get("probes", 0.0), 1),
        take=total.get("take_us", 0.0) / 1e6 / max(total.get("takes", 0.0), 1),
        unread=unread,
    )
