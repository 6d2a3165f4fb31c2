"""`python -m benchtools.report`'s table: a verdict only where a target is set, naming what is missed."""

from __future__ import annotations

from benchtools.report import FIGURES, Row, Target, format_table


def test_a_row_without_target_gets_no_verdict_and_the_note_says_why() -> None:
    """Single calls are shown for comparison: no BELOW, and the note explains why."""
    table = format_table([Row("queue push+pop [single calls]", "pairs", 7e6, 8.6, None)])
    row = table.splitlines()[1]
    assert row.rstrip().endswith(" -") and "BELOW" not in table and "none (single calls: see below)" in row
    assert "Single calls of a kernel that has a bulk form get no verdict" in table


def test_a_row_below_its_target_names_the_target_and_what_it_misses() -> None:
    """A bulk form under 20x and a rate under its target say so, beside the target itself."""
    target = Target(rate=5_000_000, speedup=20)
    table = format_table(
        [Row("fair [batch API]", "pairs", 4e6, 11.0, target), Row("fifo [batch API]", "pairs", 9e6, 30.0, target)]
    )
    below, ok = table.splitlines()[1:3]
    assert ">= 5,000,000 pairs/s and >= 20x python" in below
    assert below.endswith("BELOW (rate < 5,000,000/s, x python < 20)")
    assert ok.endswith(" ok")


def test_single_calls_with_a_bulk_form_have_no_target() -> None:
    """Of every figure whose kernel has a bulk form (batch API or flat arrays), the single-call row is
    held to no ratio target (at most a rate), and every bulk form is held to 20x."""
    for _, variants in FIGURES:
        bulk = {v for v in variants if v in ("batch", "flat")}
        for variant, target in variants.items():
            if variant in bulk:
                assert target is not None and target.speedup == 20
            elif bulk:
                assert target is None or target.speedup is None
