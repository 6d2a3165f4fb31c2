"""The simulator's speed, base against head: `python benchtools/sim_speed_ab.py BASE_PYTHON HEAD_PYTHON` runs
the steal speed point (bench_sim.py's sparrow_steal configuration: 10,000 workers x 1 slot, 100-task jobs,
per_job durations, load 0.9) under the two interpreters alternately (base, head, head, base, base, ...: the
order turns each pair), each run a fresh process, and prints simulated tasks per CPU-second of each run, each
pair's ratio head / base, and the medians. Alternating pairs share a shared machine's load alike; CPU time (the
process's own) is less sensitive to other processes than wall time.

`--instructions` counts instead (valgrind's callgrind, deterministic): the instructions of the extension's
`_simulate` at 3,000 jobs less those at 1,000, per simulated task between, for each interpreter.

Each interpreter imports its own sparrow_core (two installs made alike, e.g. main's and a branch's).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile

# Run by each interpreter: the figure bench_sim.py's main prints, for one run.
RUN = """
import sys, time
from sparrow_core.sim import SimConfig, simulate
config = SimConfig(policy=sys.argv[1], n_workers=10_000, slots=1, tasks_per_job=100, load=0.9, n_jobs=int(sys.argv[2]),
                   duration="per_job", mean_duration=0.1, keep_task_waits=False, seed=1)
simulate(SimConfig(policy=sys.argv[1], n_workers=10_000, slots=1, n_jobs=20))  # warm the allocator
start = time.process_time()
result = simulate(config)
print(result.n_tasks / (time.process_time() - start))
"""


# The runs' working directory: `python -c` puts it first on sys.path, so in a checkout it would import
# that checkout's sparrow_core instead of the interpreter's own install.
NEUTRAL = tempfile.gettempdir()


def rate(python: str, policy: str, jobs: int) -> float:
    """Simulated tasks per CPU-second of one run in a fresh process of `python`."""
    command = [python, "-c", RUN, policy, str(jobs)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=NEUTRAL)
    return float(out.stdout.split()[-1])


def instructions(python: str, policy: str, jobs: int) -> int:
    """Instructions executed inside the extension's _simulate calls of one run (callgrind)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--toggle-collect=__pyx_pf_12sparrow_core_5_core_*_simulate*",
        "--callgrind-out-file=/dev/null",
        python,
        "-c",
        RUN,
        policy,
        str(jobs),
    ]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # numpy's BLAS threads run instructions of their own
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=NEUTRAL)
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise SystemExit(f"sim_speed_ab: no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_task(python: str, policy: str) -> float:
    """Instructions per simulated task: 3,000 jobs less 1,000 jobs, over the 200,000 tasks between."""
    return (instructions(python, policy, 3_000) - instructions(python, policy, 1_000)) / 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description="Simulated tasks per CPU-second, base and head alternating.")
    parser.add_argument("base", help="the base install's python")
    parser.add_argument("head", help="the head install's python")
    parser.add_argument("--pairs", type=int, default=10, help="alternating pairs of runs (default 10)")
    parser.add_argument("--jobs", type=int, default=5_000, help="jobs per run (default 5,000, as bench_sim.py)")
    parser.add_argument("--policy", default="sparrow_steal", help="the placement policy (default sparrow_steal)")
    parser.add_argument("--instructions", action="store_true", help="count instructions per task (callgrind) instead")
    args = parser.parse_args()
    if args.instructions:
        base_ir, head_ir = per_task(args.base, args.policy), per_task(args.head, args.policy)
        change = head_ir / base_ir - 1
        print(f"{args.policy} instructions per task: base {base_ir:.0f}, head {head_ir:.0f} ({change:+.1%})")
        return
    if args.pairs < 1 or args.jobs < 1:
        raise SystemExit("sim_speed_ab: --pairs and --jobs must be >= 1")
    base: list[float] = []
    head: list[float] = []
    for i in range(args.pairs):
        if i % 2 == 0:  # the order alternates: a pair's second run may gain (a warmer machine) or lose
            base.append(rate(args.base, args.policy, args.jobs))
            head.append(rate(args.head, args.policy, args.jobs))
        else:
            head.append(rate(args.head, args.policy, args.jobs))
            base.append(rate(args.base, args.policy, args.jobs))
        print(f"pair {i + 1}: base {base[-1] / 1e6:.3f}M head {head[-1] / 1e6:.3f}M tasks/CPU-s, ", end="")
        print(f"head/base {head[-1] / base[-1]:.3f}")
    ratios = [h / b for b, h in zip(base, head, strict=True)]
    print(
        f"{args.policy}, {args.jobs} jobs, {args.pairs} pairs: base median {statistics.median(base) / 1e6:.3f}M, "
        f"head median {statistics.median(head) / 1e6:.3f}M tasks/CPU-s; head/base: median of pairs "
        f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}), head faster in "
        f"{sum(r > 1 for r in ratios)} of {len(ratios)}"
    )


if __name__ == "__main__":
    main()
