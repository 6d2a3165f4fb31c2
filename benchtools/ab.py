"""The runtime A/B: `python -m benchtools.ab BASE HEAD` builds both commits, each into a virtualenv of its
own (kept under .asv/ab/<commit>/, so a second run reuses them), then runs bench_vs_pool.py's
measurement under the two alternately (base, head, base, ...: `--repeat` fresh clusters each), and
compares Sparrow's own figures head over base: the map's and the submit loop's time per task, the
10-task job p50, and the CPU per task of each. It fails (exit status 1) when one is worse than
`--factor`.

Why beside asv's ratios to a process pool: the two builds run the same workload interleaved minutes
apart, so a shared machine's load hits both alike, and a slowdown that costs no CPU (a wait, a
timer) shows in wall time, which a ratio to a process pool measured minutes apart on a machine
under load does not resolve (docs/benchmarks.md). Imports only the standard library at module level
(asv imports every module of bench/).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

from benchtools.asv_project import REPOSITORY, git

FACTOR = 1.2
FIGURES = (  # bench_vs_pool.absolute's keys: (key, label, higher is better)
    ("map", "map tasks/s", True),
    ("submit", "submit-loop tasks/s", True),
    ("job_p50", "10-task job p50 ms", False),
    ("map_cpu", "map CPU us/task", False),
    ("submit_cpu", "submit CPU us/task", False),
    ("job_cpu", "10-task job CPU us/task", False),
)


def build(project: Path, commit: str) -> str:
    """The python of a virtualenv with `commit` installed (built once, then reused)."""
    folder = project / ".asv" / "ab" / commit[:12]
    python = folder / "venv" / "bin" / "python"
    if (folder / "ready").exists():
        return str(python)
    folder.mkdir(parents=True, exist_ok=True)
    tree = folder / "tree"
    if not tree.exists():
        git(project, "worktree", "add", "--detach", str(tree), commit)
    venv = [sys.executable, "-m", "venv", str(folder / "venv")]
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(tree)]
    print("ab:", " ".join(venv[-2:]), flush=True)
    subprocess.run(venv, check=True, cwd=tree)
    _inherit_dependencies(python)
    print("ab:", " ".join(install[-3:]), flush=True)
    subprocess.run(install, check=True, cwd=tree)
    (folder / "ready").write_text(commit + "\n")
    return str(python)


def _inherit_dependencies(python: Path) -> None:
    """Give the virtualenv of `python` this interpreter's packages, after its own: `--system-site-packages`
    would give the base interpreter's, which lack the dependencies when this one is itself a virtualenv. A path
    in a .pth file is searched, its own .pth files are not run, so this one's editable install stays out."""
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    theirs = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(own) / "_ab_dependencies.pth").write_text("".join(f"{path}\n" for path in theirs))


def compare(base: list[dict], head: list[dict]) -> list[tuple[str, float, float, float, list[float]]]:
    """Per figure: (label, base median, head median, head's worsening over base (> 1: worse), the
    worsening of each alternating pair of runs)."""
    out = []
    for key, label, higher in FIGURES:
        b, h = [run[key] for run in base], [run[key] for run in head]
        pairs = [(x / y if higher else y / x) for x, y in zip(b, h, strict=True)]
        worse = statistics.median(b) / statistics.median(h) if higher else statistics.median(h) / statistics.median(b)
        out.append((label, statistics.median(b), statistics.median(h), worse, pairs))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("base", help="the commit, branch or tag to compare with (e.g. main)")
    parser.add_argument("head", nargs="?", default="HEAD", help="the commit to check (default HEAD)")
    parser.add_argument("--factor", type=float, default=FACTOR, help=f"the worsening that fails (default {FACTOR:g})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per build, alternating (default 3)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per run (bench_vs_pool --rounds)")
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        metavar="N",
        help="bench_vs_pool --pipeline-depth for both builds (0: off); default: each build's own default",
    )
    parser.add_argument("--base-python", help="run the base with this interpreter (its installed build) instead")
    parser.add_argument("--head-python", help="run the head with this interpreter instead of building it")
    parser.add_argument("--project", type=Path, default=REPOSITORY)
    args = parser.parse_args(argv)
    if not args.factor > 1.0:
        parser.error(f"--factor must be > 1, got {args.factor}")
    if min(args.repeat, args.rounds) < 1:
        parser.error("--repeat and --rounds must be >= 1")
    commits = [git(args.project, "rev-parse", "--verify", f"{c}^{{commit}}").strip() for c in (args.base, args.head)]
    if commits[0] == commits[1] and not (args.base_python and args.head_python):
        parser.error(f"{args.base} and {args.head} are the same commit ({commits[0][:8]}): nothing to compare")
    from bench.bench_vs_pool import absolute  # imports numpy: not at module level

    given = (args.base_python, args.head_python)
    pythons = [python or build(args.project, commit) for python, commit in zip(given, commits, strict=True)]
    script = str(Path(__file__).parents[1] / "bench" / "bench_vs_pool.py")
    runs: list[list[dict]] = [[], []]
    for _ in range(args.repeat):
        for i, python in enumerate(pythons):
            command = [python, script, "--json", "--rounds", str(args.rounds)]
            if args.pipeline_depth is not None:
                command += ["--pipeline-depth", str(args.pipeline_depth)]
            out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=1800).stdout
            rounds = json.loads(out.splitlines()[-1])
            runs[i].append(absolute(rounds, "sparrow"))
    print(
        f"ab: {args.head} ({commits[1][:8]}) against {args.base} ({commits[0][:8]}), {args.repeat} runs each "
        f"alternating, {args.rounds} rounds per run"
        + ("" if args.pipeline_depth is None else f", pipeline depth {args.pipeline_depth or 'off'}")
        + f"; failing past {args.factor:g}"
    )
    failed = []
    for label, b, h, worse, pairs in compare(*runs):
        verdict = "WORSE" if worse > args.factor else "ok"
        print(
            f"  {label:<24} base {b:,.2f}  head {h:,.2f}  head's worsening {worse:.2f}x "
            f"(pairs {min(pairs):.2f}-{max(pairs):.2f})  {verdict}"
        )
        if worse > args.factor:
            failed.append(label)
    print(f"ab: FAILED ({', '.join(failed)})" if failed else "ab: passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
