"""Prints the kernel figures of issue 2 against their targets, each beside its pure-Python
baseline measured in the same run: `python -m bench.report [--repeat N]`.

Every figure is the best of N runs (the machine may be shared): rate = work / best time.
"""

from __future__ import annotations

import argparse
import os
import platform

from bench.bench_queue import push_pop_case
from bench.bench_sampling import (
    batch_case,
    candidates_case,
    constrained_case,
    job_case,
    per_task_case,
)
from bench.bench_task_table import late_binding_case

TARGET_SPEEDUP = 20.0

# (case builder, {variant: target rate or None}). Queues: 10,000 reservations queued at
# once (100 per user), and a deep queue of 100,000 (memory-bound: slower per pair).
FIGURES = [
    (lambda: batch_case(10_000, 100, 2.0), {"batch": 1_000_000, "calls": None}),
    (lambda: candidates_case(10_000, 1_000, 10), {"batch": None, "calls": None}),
    (lambda: per_task_case(10_000, 100), {"calls": None}),
    (lambda: constrained_case(10_000, 100), {"calls": None, "flat": None}),
    (lambda: job_case(10_000, 100, 1_000), {"calls": None, "flat": None}),
    (lambda: push_pop_case("fair", 100, 10_000), {"batch": 5_000_000, "calls": 2_000_000}),
    (lambda: push_pop_case("fair", 100, 100_000), {"batch": 5_000_000, "calls": 2_000_000}),
    (lambda: push_pop_case("fifo", 100, 10_000), {"batch": None, "calls": None}),
    (lambda: push_pop_case("priority", 100, 10_000), {"batch": None, "calls": None}),
    (lambda: late_binding_case(1000, 100), {"batch": None, "calls": None}),
]
VARIANT_NAMES = {"batch": "batch API", "calls": "single calls", "flat": "flat arrays"}


def measure(repeat: int) -> list[tuple[str, str, float, float | None, float]]:
    """(figure, unit, rate, target, speedup over the Python baseline) for every figure."""
    rows = []
    for build, variants in FIGURES:
        case = build()
        baseline = case.rate("python", repeat)
        for variant, target in variants.items():
            rate = case.rate(variant, repeat)
            rows.append((f"{case.name} [{VARIANT_NAMES[variant]}]", case.unit, rate, target, rate / baseline))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept (default 5)")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {load}; best of {args.repeat}")
    print(f"{'figure':<72} {'rate /s':>14} {'target /s':>12} {'x python':>9}  verdict")
    for name, unit, rate, target, speedup in measure(args.repeat):
        met = (target is None or rate >= target) and speedup >= TARGET_SPEEDUP
        target_text = f"{target:,.0f}" if target else "-"
        print(f"{name:<72} {rate:>14,.0f} {target_text:>12} {speedup:>8.1f}x  {'ok' if met else 'BELOW'} ({unit})")


if __name__ == "__main__":
    main()
