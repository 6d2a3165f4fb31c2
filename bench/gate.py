"""The regression gate: `python -m bench.gate --base main` benchmarks the base commit and HEAD with
asv (`asv continuous`, each commit built in its own virtualenv) and fails (exit status 1) when a
gated benchmark of HEAD is worse than the base's by more than FACTOR, or fails where the base's ran.

Gated: GATED_BENCHMARKS, each kernel's time over its pure-Python baseline's, both measured in the
same run (KernelBenchmark.track_time_vs_python in bench/measure.py). Lower is better, as asv
assumes, and a ratio of one run is what survives a shared, noisy machine: absolute times move
with whatever else runs, a ratio much less. FACTOR is wide enough for this 2-core machine under
the load of other work (docs/benchmarks.md has the measurements) and narrow enough for what a
kernel regression looks like (a lost batch path, an O(n) step, a debug build: 2x to 100x).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.asv_project import REPOSITORY, asv, ensure_machine, git

GATED_BENCHMARKS = r"\.track_time_vs_python\b"  # \b, not $: asv matches NAME(PARAMS) of parametrized ones
FACTOR = 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("`", ""), formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )  # fmt: skip
    parser.add_argument("--base", required=True, help="the commit, branch or tag to compare with (e.g. main)")
    parser.add_argument("--head", default="HEAD", help="the commit to check (default HEAD; commit your work first)")
    parser.add_argument("--factor", type=float, default=FACTOR, help=f"the worsening that fails (default {FACTOR:g})")
    parser.add_argument("--project", type=Path, default=REPOSITORY, help="the asv project (default: this repository)")
    args = parser.parse_args(argv)
    if not args.factor > 1.0:
        parser.error(f"--factor must be > 1, got {args.factor}")
    base, head = (
        git(args.project, "rev-parse", "--verify", f"{name}^{{commit}}").strip() for name in (args.base, args.head)
    )
    if base == head:
        parser.error(f"--base {args.base} and --head {args.head} are the same commit ({base[:8]}): nothing to compare")
    ensure_machine(args.project)
    print(f"gate: {args.head} ({head[:8]}) against {args.base} ({base[:8]}), benchmarks matching "
          f"{GATED_BENCHMARKS}, failing past a factor of {args.factor:g}", flush=True)  # fmt: skip
    status = asv(args.project, "continuous", "--factor", str(args.factor), "--bench", GATED_BENCHMARKS, base, head)
    print(f"gate: {'FAILED' if status else 'passed'} (asv continuous exit status {status})")
    return status


if __name__ == "__main__":
    sys.exit(main())
