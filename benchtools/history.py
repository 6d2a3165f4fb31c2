"""Benchmark history: `python -m benchtools.history --commits 20` benchmarks the last N commits of the
current branch (first parents) and publishes the offline dashboard (benchtools/dashboard.py).

asv builds each commit itself (asv.conf.json: environment_type virtualenv): one environment with
the dependencies, then per commit a wheel built from a clean checkout and installed there, so the
figures of a commit come from that commit's code. Results go to .asv/results/<machine>/, one file
per commit; a commit's benchmarks that already have a result are not run again, so a second run
only adds the new commits. Works from a fresh clone: asv creates what it needs under .asv/.

By default only HISTORY_BENCHMARKS run (under a minute per commit on 2 cores, build included,
against about two for the whole suite): the ratios to the Python baselines, the runtime's
throughput, latency and 80%-load overhead, their ratios to a process pool, the simulator's speed.
`--all` runs everything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchtools.asv_project import REPOSITORY, asv, ensure_machine, git
from benchtools.dashboard import publish

HISTORY_BENCHMARKS = (
    r"\.track_time_vs_python\b",  # \b, not $: asv matches NAME(PARAMS) of parametrized ones
    r"^bench_runtime\.RuntimeNoOpTasks\.track_",
    r"^bench_runtime\.RuntimeAtLoad\.track_",
    r"^bench_vs_pool\.RuntimeVsPool\.track_",
    r"^bench_users\.UsersDoor\.track_",
    r"^bench_sim\.SimulatorThroughput\.track_",
)


def last_commits(project: Path, n: int) -> list[str]:
    """The last n commits of HEAD's first-parent history, newest first (fewer if the history is shorter)."""
    return git(project, "rev-list", "--first-parent", f"--max-count={n}", "HEAD").split()


def benchmark_commits(project: Path, commits: list[str], patterns: tuple[str, ...]) -> int:
    """`asv run` of `patterns` (all benchmarks if empty) on `commits`; asv's exit status."""
    with tempfile.NamedTemporaryFile("w", prefix="sparrow-history-", suffix=".txt") as hashes:
        hashes.write("\n".join(commits) + "\n")
        hashes.flush()
        selection = [arg for pattern in patterns for arg in ("--bench", pattern)]
        return asv(project, "run", f"HASHFILE:{hashes.name}", "--skip-existing", *selection)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("`", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--commits", type=int, default=20, help="how many commits back from HEAD (default 20)")
    selection = parser.add_mutually_exclusive_group()
    selection.add_argument("--all", action="store_true", help="run every benchmark, not only HISTORY_BENCHMARKS")
    selection.add_argument(
        "--bench", action="append", metavar="REGEX", help="run the benchmarks matching REGEX (repeatable)"
    )
    parser.add_argument("--project", type=Path, default=REPOSITORY, help="the asv project (default: this repository)")
    args = parser.parse_args(argv)
    if args.commits < 1:
        parser.error(f"--commits must be >= 1, got {args.commits}")
    patterns = () if args.all else tuple(args.bench or HISTORY_BENCHMARKS)

    commits = last_commits(args.project, args.commits)
    ensure_machine(args.project)
    print(
        f"benchmarking {len(commits)} commits ({commits[-1][:8]}..{commits[0][:8]}), "
        + ("every benchmark" if not patterns else "benchmarks matching " + " | ".join(patterns)),
        flush=True,
    )
    start = time.monotonic()
    status = benchmark_commits(args.project, commits, patterns)
    seconds = time.monotonic() - start
    folder = publish(args.project)
    print(
        f"{len(commits)} commits in {seconds:.0f} s ({seconds / len(commits):.0f} s per commit, builds included; "
        "commits benchmarked before are not run again)"
    )
    print(
        f"dashboard (offline) in {folder}: view it with `asv preview` in {args.project}, "
        "then open the address it prints"
    )
    if status != 0:
        print("asv reported failures (a commit that does not build, a benchmark that raised): see its output above")
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
