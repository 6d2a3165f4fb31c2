"""`sparrow experiment steal-study`: the stealing experiment's designs in the simulator alone, no cluster
(sparrow_experiments.steal_design), in OUT/steal-study.md."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rich.console import Console

from sparrow_experiments import steal_design

from .common import CommandError
from .config import number
from .experiment_flags import POSITIVE_INT, POSITIVE_NUMBER, flag
from .help_format import DefaultsShown
from .output import output_folder


def add_steal_study_parser(experiments: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = experiments.add_parser(
        "steal-study",
        help="the steal experiment's job mixes in the simulator alone: where each puts the short jobs' p50",
        description="For each job mix of the session-10 comparison (the steal experiment's own first), simulate "
        "--seeds seeds of its arrivals with stealing off and on (the experiment's model, drawing its own probes, "
        "with fixed hops) and write OUT/steal-study.md: per mix the short jobs blocked behind a long task, the "
        "speed-up of their p50, and how many points of their percentile lie within 10% of the p50 (how far a "
        "prediction may miss and still be within 10%). No cluster is started. `--out docs/paper` regenerates "
        "the committed copy.",
        formatter_class=DefaultsShown,
    )
    p.add_argument("--seeds", metavar="N", type=POSITIVE_INT, default=40, help="seeds of each mix's arrivals")
    p.add_argument("--seed", metavar="N", type=int, default=100, help="the first seed (the experiment's are 0-2)")
    p.add_argument(
        "--seconds", metavar="S", type=POSITIVE_NUMBER, default=90.0, help="seconds during which jobs arrive"
    )
    p.add_argument(
        "--load",
        metavar="FRACTION",
        type=flag(number(0.0, 1.0, open_low=True)),
        default=0.85,
        help="offered load, a fraction of the slots",
    )
    p.add_argument("--node-monitors", metavar="N", type=POSITIVE_INT, default=16, help="node monitors, one slot each")
    p.add_argument(
        "--time-scale", metavar="X", type=POSITIVE_NUMBER, default=4.0, help="multiplies every task duration"
    )
    p.add_argument(
        "--network",
        metavar="MS",
        type=POSITIVE_NUMBER,
        default=steal_design.STUDY_NETWORK * 1e3,
        help="the model's one-way network delay (half the late-binding gap), in ms",
    )
    p.add_argument(
        "--steal-wait",
        metavar="MS",
        type=flag(number(0.0)),
        default=steal_design.STUDY_STEAL_WAIT * 1e3,
        help="the model's thieves' wait before probing (a runtime's reaction and slower round trips), in ms",
    )
    p.add_argument("--out", metavar="DIR", type=Path, help="folder for steal-study.md (default: a new folder here)")
    p.set_defaults(func=run_steal_study)


def run_steal_study(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    seeds = range(args.seed, args.seed + args.seeds)
    results = []
    hops, steal_wait = steal_design.study_hops(args.network / 1e3), args.steal_wait / 1e3
    try:
        folder, _ = output_folder(args.out, "sparrow-steal-study")
        for name, mix in steal_design.CANDIDATES:
            figures = steal_design.study(
                mix,
                seeds,
                load=args.load,
                seconds=args.seconds,
                node_monitors=args.node_monitors,
                time_scale=args.time_scale,
                hops=hops,
                steal_wait=steal_wait,
            )
            results.append((name, mix, figures))
            console.print(steal_design.row(name, mix, figures), markup=False)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    command = " ".join(["sparrow", *map(shlex.quote, sys.argv[1:])]) if sys.argv[1:2] == ["experiment"] else ""
    setup = (
        f"{args.node_monitors} node monitors x 1 slot, load {args.load:g}, {args.seconds:g} s of arrivals per seed, "
        f"time scale {args.time_scale:g}, short tasks {steal_design.Mix().short_ms:g} ms, seeds {seeds.start}-"
        f"{seeds.stop - 1}."
    )
    page = folder / "steal-study.md"
    page.write_text(
        steal_design.render(
            results,
            command=command or "sparrow experiment steal-study",
            setup=setup,
            hops=hops,
            steal_wait=steal_wait,
        )
    )
    console.print(f"wrote {page}")
    return 0
