"""benchtools/sim_digest.py's portable runs (traces: no libm, the same on any machine) decide exactly as
the reference install did (REFERENCE, taken before the simulator's speed work): every policy on three
traces (heavy-tailed with constraints and stages, mixed per-task durations, a replayed placement),
with stealing, pipelining, delay and cancellation variants."""

from __future__ import annotations

from benchtools.sim_digest import digest

# `python benchtools/sim_digest.py --portable` on the reference install (main before the simulator's speed work).
REFERENCE = "56ce8ab141f3858a5ea9fbaab5b3a6eb1e762f24b0882ad0ccabb5e408f7e2ca"


def test_the_trace_runs_decide_as_main_did() -> None:
    """Every output of 82 runs, hashed: equal to main's digest, bit for bit."""
    assert digest(portable=True) == REFERENCE
