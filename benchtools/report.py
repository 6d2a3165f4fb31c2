"""Prints the kernel figures, each beside its pure-Python baseline measured in the same
run, with a verdict wherever a target is set: `python -m benchtools.report [--repeat N]`.

Every figure is the best of N runs (the machine may be shared): rate = work / best time.

Targets: the bulk form of every kernel (its batch API, flat arrays, or its only API) at
least 20x its pure-Python baseline; batch sampling at least 1,000,000 jobs/s; the fair queue at
least 5,000,000 push+pop pairs/s through push_many/pop_many and 2,000,000 through single calls.
Single calls of a kernel that has a bulk form are shown for comparison and get no verdict on the
ratio: each pays the interpreter's cost of one call per job or reservation, as the baseline pays
per unit, so their ratio measures that cost rather than the kernel.
"""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass

from bench.bench_queue import push_pop_case
from bench.bench_sampling import (
    batch_case,
    candidates_case,
    constrained_case,
    job_case,
    per_task_case,
)
from bench.bench_task_table import late_binding_case
from bench.measure import Case

BULK_SPEEDUP = 20.0


@dataclass(frozen=True)
class Target:
    """The target of one figure: a rate (units/s), a ratio to the baseline, or both."""

    rate: float | None = None
    speedup: float | None = None

    def describe(self, unit: str) -> str:
        parts = [f">= {self.rate:,.0f} {unit}/s"] if self.rate is not None else []
        return " and ".join(parts + ([f">= {self.speedup:g}x python"] if self.speedup is not None else []))

    def missed(self, rate: float, speedup: float) -> list[str]:
        """The parts of the target the figure misses (empty: met)."""
        return ([f"rate < {self.rate:,.0f}/s"] if self.rate is not None and rate < self.rate else []) + (
            [f"x python < {self.speedup:g}"] if self.speedup is not None and speedup < self.speedup else []
        )


BULK = Target(speedup=BULK_SPEEDUP)
FAIR_QUEUE_BATCH = Target(rate=5_000_000, speedup=BULK_SPEEDUP)
FAIR_QUEUE_CALLS = Target(rate=2_000_000)

# (case builder, {variant: its target, None where none applies}). Queues: 10,000 reservations
# queued at once (100 per user), and a deep queue of 100,000 (memory-bound: slower per pair).
FIGURES: list[tuple[Callable[[], Case], dict[str, Target | None]]] = [
    (lambda: batch_case(10_000, 100, 2.0), {"batch": Target(rate=1_000_000, speedup=BULK_SPEEDUP), "calls": None}),
    (lambda: candidates_case(10_000, 1_000, 10), {"batch": BULK, "calls": None}),
    (lambda: per_task_case(10_000, 100), {"calls": BULK}),  # its only API: one call per job
    (lambda: constrained_case(10_000, 100), {"calls": None, "flat": BULK}),
    (lambda: job_case(10_000, 100, 1_000), {"calls": None, "flat": BULK}),
    (lambda: push_pop_case("fair", 100, 10_000), {"batch": FAIR_QUEUE_BATCH, "calls": FAIR_QUEUE_CALLS}),
    (lambda: push_pop_case("fair", 100, 100_000), {"batch": FAIR_QUEUE_BATCH, "calls": FAIR_QUEUE_CALLS}),
    (lambda: push_pop_case("fifo", 100, 10_000), {"batch": BULK, "calls": None}),
    (lambda: push_pop_case("priority", 100, 10_000), {"batch": BULK, "calls": None}),
    (lambda: late_binding_case(1000, 100), {"batch": BULK, "calls": None}),
]
VARIANT_NAMES = {"batch": "batch API", "calls": "single calls", "flat": "flat arrays"}


@dataclass(frozen=True)
class Row:
    figure: str
    unit: str
    rate: float
    speedup: float  # over the Python baseline
    target: Target | None

    def verdict(self) -> str:
        """ "ok", "BELOW (what is missed)", or "-" where no target applies."""
        if self.target is None:
            return "-"
        missed = self.target.missed(self.rate, self.speedup)
        return f"BELOW ({', '.join(missed)})" if missed else "ok"


def measure(repeat: int) -> list[Row]:
    """One row per (figure, variant) of FIGURES; a variant the installed sparrow_core lacks is left out."""
    rows = []
    for build, variants in FIGURES:
        case = build()
        baseline = case.rate("python", repeat)
        for variant, target in variants.items():
            if variant not in case.variants:
                continue
            rate = case.rate(variant, repeat)
            name = f"{case.name} [{VARIANT_NAMES[variant]}]"
            rows.append(Row(name, case.unit, rate, rate / baseline, target))
    return rows


def format_table(rows: list[Row]) -> str:
    """The rows as a fixed-width table, then a note on what the verdicts hold each figure to."""
    targets = [
        row.target.describe(row.unit) if row.target is not None else "none (single calls: see below)" for row in rows
    ]
    width = max(map(len, [*targets, "target"]))
    lines = [f"{'figure':<72} {'rate /s':>14} {'x python':>9}  {'target':<{width}}  verdict"]
    for row, target in zip(rows, targets, strict=True):
        lines.append(f"{row.figure:<72} {row.rate:>14,.0f} {row.speedup:>8.1f}x  {target:<{width}}  {row.verdict()}")
    lines += [
        "",
        f"Targets: each kernel's bulk form (batch API, flat arrays, or its only API) >= {BULK_SPEEDUP:g}x",
        "its pure-Python baseline; batch sampling and the fair queue also a rate.",
        "Single calls of a kernel that has a bulk form get no verdict: each pays the interpreter's cost of",
        "one Python call per job or reservation, as the baseline pays per unit, so their ratio measures",
        "that cost rather than the kernel. They are shown for comparison; use the bulk form where speed matters.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept (default 5)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {load}; best of {args.repeat}")
    print(format_table(measure(args.repeat)))


if __name__ == "__main__":
    main()
