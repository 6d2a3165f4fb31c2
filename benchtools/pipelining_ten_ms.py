"""The two 10 ms-task figures under each pipelining setting, alternating in one run (no Dask needed).

bench_peers.py's 10 ms load case (its `sparrow_load` and `pool_load`: 2 node monitors x 1 slot against a
ProcessPoolExecutor(2), saturated tasks/s, then Poisson arrivals of 10-task jobs at 80% load): per round the
pool once, then Sparrow with the default (steady: gated, and steady run times ask ahead at a task's start), and
each `--pipeline` mode that asks ahead (gated, jit, steady, always) and always with `--give-back` (set through the
node monitors' SPARROW_PIPELINE and SPARROW_GIVE_BACK variables), so the machine's noise hits all alike. Prints
one line per run: the saturated rate over the pool's (target >= 0.99x) and the 80%-load p50 beyond the task over the
floor's (target <= 1.1x; the pool's own over the same floor beside it).

    python -m benchtools.pipelining_ten_ms --rounds 3 --load-seconds 10
    python -m benchtools.pipelining_ten_ms --rounds 4 --settings default,steady,always   # some of the settings
"""

from __future__ import annotations

import argparse
import os
import time

from bench import bench_peers as peers

SETTINGS = {
    "default": {},
    "gated": {"SPARROW_PIPELINE": "gated"},
    "jit": {"SPARROW_PIPELINE": "jit"},
    "steady": {"SPARROW_PIPELINE": "steady"},
    "always": {"SPARROW_PIPELINE": "always"},
    "always+give-back": {"SPARROW_PIPELINE": "always", "SPARROW_GIVE_BACK": "true"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each: the pool, then every setting")
    parser.add_argument("--load-seconds", type=float, default=10.0, help="seconds of arrivals in the load case")
    parser.add_argument("--seed", type=int, default=0, help="seed of the arrivals (every run: the same)")
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma list of {', '.join(SETTINGS)}")
    args = parser.parse_args()
    if args.rounds < 1 or args.load_seconds <= 0:
        parser.error("--rounds must be >= 1 and --load-seconds > 0")
    chosen = args.settings.split(",")
    unknown = sorted(set(chosen) - set(SETTINGS))
    if unknown:
        parser.error(f"unknown settings: {', '.join(unknown)} (known: {', '.join(SETTINGS)})")
    arrivals = peers.load_arrivals(args.load_seconds, args.seed)
    for r in range(args.rounds):
        pool = peers.pool_load(arrivals)
        for name in chosen:
            env = SETTINGS[name]
            for key in {variable for each in SETTINGS.values() for variable in each}:
                os.environ.pop(key, None)
            os.environ.update(env)
            load = os.getloadavg()[0]
            ours, floor = peers.sparrow_load("process", arrivals, None)
            p50, floor50, pool50 = ours.beyond_task_ms(50), floor.beyond_task_ms(50), pool.beyond_task_ms(50)
            print(
                f"round {r} {name:17s} {time.strftime('%H:%M:%S')} load {load:5.2f}: saturated {ours.rate:6.1f}/s, "
                f"pool {pool.rate:6.1f}/s = {ours.rate / pool.rate:.2f}x; 80% p50 {p50:8.2f} ms, "
                f"floor {floor50:6.2f} = {p50 / floor50:.2f}x (pool {pool50 / floor50:.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
