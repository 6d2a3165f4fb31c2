"""What the 80%-load target (p50 of job response - 10 ms at most 1.1x the zero-overhead floor's) asks of a
scheduler: the floor of bench_peers' load case (the simulator's omniscient policy over the same 2 slots, no
delay, the same Poisson arrivals of 10-task jobs of 10 ms at 80% load) against the same replay with every
task holding its slot `g` longer (a per-task gap between a task's end and the next one's start: a round trip,
a worker hop), and with every job `c` later (a per-job constant: the submission hop, the outcome's way back).

Script: `python -m benchtools.floor_gap [--seconds S] [--seed N] [--overshoot MS]` prints the ratio to the floor
for each g and c. No cluster is started: this is the simulator only.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.bench_peers import LOAD_JOB_SIZE, SLOTS, TASK_S, load_arrivals

try:
    from sparrow_experiments.replay import ReplayJob, ideal
except ImportError:  # the suite must import with any version of the package
    ideal = None

GAPS_MS = (0.0, 0.1, 0.3, 0.5, 1.0, 2.0)
CONSTANTS_MS = (0.5, 1.0, 2.0)


def beyond_task_p50_ms(arrivals: np.ndarray, task_s: float, measured_s: float) -> float:
    """The omniscient replay's p50 of (job response - `measured_s`), ms, each task `task_s` long."""
    jobs = [ReplayJob(float(a), np.full(LOAD_JOB_SIZE, task_s)) for a in arrivals.tolist()]
    result = ideal(jobs, node_monitors=SLOTS, slots=1)
    return 1e3 * float(np.percentile(result.job_response - measured_s, 50))


def gap_ratios(arrivals: np.ndarray, overshoot_s: float = 0.0) -> tuple[float, dict[float, float], dict[float, float]]:
    """(the floor's p50 beyond the task in ms, {g ms: ratio to it}, {c ms: ratio to it})."""
    measured = TASK_S + overshoot_s
    floor = beyond_task_p50_ms(arrivals, measured, measured)
    gaps = {g: beyond_task_p50_ms(arrivals, measured + g / 1e3, measured) / floor for g in GAPS_MS}
    constants = {c: (floor + c) / floor for c in CONSTANTS_MS}
    return floor, gaps, constants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of arrivals (bench_peers' --load-seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the arrivals (bench_peers' --seed)")
    parser.add_argument("--overshoot", type=float, default=0.0, metavar="MS", help="a sleep's overshoot, in the floor")
    args = parser.parse_args()
    if args.seconds <= 0 or args.overshoot < 0:
        parser.error("--seconds must be > 0 and --overshoot >= 0")
    if ideal is None:
        parser.exit(2, "floor_gap.py needs sparrow_runtime: pip install -e .\n")
    arrivals = load_arrivals(args.seconds, args.seed)
    floor, gaps, constants = gap_ratios(arrivals, args.overshoot / 1e3)
    print(f"{len(arrivals)} jobs of {LOAD_JOB_SIZE} x {TASK_S * 1e3:g} ms on {SLOTS} slots; floor p50 {floor:.1f} ms")
    print("per-task gap g:   " + "  ".join(f"{g:g} ms {r:.3f}x" for g, r in gaps.items()))
    print("per-job constant: " + "  ".join(f"{c:g} ms {r:.3f}x" for c, r in constants.items()))


if __name__ == "__main__":
    main()
