"""The work-stealing experiment: short and long jobs mixed at high load on a local cluster, run
with stealing off and on over the same arrivals, each run predicted by the simulator.

Workload (`make_mixed`): jobs of WIDTH tasks arrive as a Poisson process at the rate that offers `load`
of the slots; a LONG_FRACTION of them are long (tasks of LONG_MS), the others short (SHORT_MS), each
task's duration drawn from a lognormal (sigma LOGNORMAL_SIGMA) around its job's mean and scaled by
`time_scale`. The long jobs hold most of the slot time (about 77%), the short ones are most of the jobs:
the heavy-tailed mix where Sparrow's short jobs wait behind long tasks in the queues they probed while
other slots sit idle (Hawk, USENIX ATC 2015). Every job is a one-stage query, so run.py runs it. The mix
(steal_design.py's C) is the one of those compared that keeps stealing's halving of the short p50 in the
most simulated seeds (docs/paper/steal-study.md).

Per run (`steal_figures`): each job's response (submission to last outcome at its client), beside the
simulator's replay of the same trace given the run's measured hops (replay.py): the sparrow policy
for a run with stealing off, sparrow_steal for one with it on; and the ideal (omniscient, no delay). A
stealing run's node monitors time their steals (steal_timing.py), far slower on one host than the model's
four hops, so the model's thieves wait the difference (`steal_wait`) before probing.

What the model replays of the run, so that its seed draws as little as possible (each model is run
MODEL_SEEDS times, its jobs pooled; `model_range` is the spread of its seeds' short p50):
- the probe placement (placement.py, the trace's `probes=`): on 16 slots, which queues the few long tasks
  block decides the short jobs' p50; the `drawn` figures, with the probes drawn, are kept beside;
- with stealing on, the steal victims (steal_replay.py): at each of its thieves' attempts the model probes
  the victims of that thief's attempt in the run within replay.py's STEAL_TOLERANCE, and draws them
  only where there is none (`victims_drawn`, the model drawing them all, is kept beside);
- each job's own submission delay (submissions.py), not one mean: a rare slow submission is enough to put a
  long task on another queue than in the run.

The short jobs' p50 is ill-conditioned here: a third to two thirds of the short jobs wait behind a long task
and the others take 100-300 ms, so the median lies in the steep part between the two, where one point of the
percentile is tens of ms. Beside each run's p50 error the report prints that slope (`p50_slope`: (p55 - p45)
/ 10) and `model_rank`: the model's p50 as a percentile of the run's short jobs (50: the run's own median),
the error in the units the blocked share is counted in. Measured figures: docs/results/steal-experiment.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .placement import RunPlacement
from .queries import LOGNORMAL_SIGMA, Query, QueryWorkload, Stage, check_workload
from .replay import STEAL_TOLERANCE, Hops, ReplayJob, StealAttempt, ideal, measure_hops, model
from .report import replay_trace
from .run import QueryRecord
from .steal_replay import on_model_clock
from .steal_timing import StealTiming
from .submissions import ReplayedSubmissions, dispatch_times, replay_submissions

SHORT_MS = 20.0
LONG_MS = 500.0  # 25x SHORT_MS: long enough to block, short enough that most seeds halve (steal_design.py)
LONG_FRACTION = 0.12  # of the jobs: with LONG_MS, about 77% of the slot time (module docstring)
WIDTH = 2  # tasks per job
TARGET_SPEEDUP = 2.0  # the claim checked: stealing at least halves the short jobs' p50 response
MODEL_TARGET = 0.10  # the claim checked: the simulator within 10% of each run at p50
MODEL_SEEDS = 20  # replays of each run by the model (module docstring); 16 workers make each one cheap
MODEL_RANGE = (10, 90)  # percentiles over the model's seeds of its short p50: the spread quoted
BLOCKED = 0.5  # seconds: a short job slower waited behind a long task (at the default 4x: 80 ms and 2 s tasks)


@dataclass(frozen=True)
class Mix:
    """The jobs' design (module docstring); the defaults are the experiment's. steal_design.py studies others in the
    simulator alone."""

    short_ms: float = SHORT_MS
    long_ms: float = LONG_MS
    long_fraction: float = LONG_FRACTION
    width: int = WIDTH

    @property
    def long_share(self) -> float:
        """The long jobs' share of the slot time."""
        long = self.long_fraction * self.long_ms
        return long / (long + (1 - self.long_fraction) * self.short_ms)


def make_mixed(
    *, load: float, seconds: float, slots: int, seed: int, time_scale: float = 1.0, mix: Mix = Mix()
) -> tuple[QueryWorkload, np.ndarray]:
    """The jobs (module docstring; `mix`: their design) as one-stage queries, and which of them are long.

    Error handling: ValueError naming the bad argument.
    """
    check_workload(load, seconds, slots, time_scale)
    if not (0 <= mix.long_fraction <= 1 and mix.short_ms > 0 and mix.long_ms > 0 and mix.width >= 1):
        raise ValueError(f"{mix}: needs a long fraction in [0, 1], positive durations and a width of at least 1")
    rng = np.random.default_rng(seed)
    mean_task = ((1 - mix.long_fraction) * mix.short_ms + mix.long_fraction * mix.long_ms) / 1e3 * time_scale
    rate = load * slots / (mean_task * mix.width)  # jobs per second
    gaps = rng.exponential(1.0 / rate, math.ceil(rate * seconds * 1.5) + 10)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps)))
    arrivals = arrivals[arrivals < seconds]
    queries, long = [], []
    for arrival in arrivals.tolist():
        is_long = bool(rng.random() < mix.long_fraction)
        mean = (mix.long_ms if is_long else mix.short_ms) / 1e3 * time_scale
        mu = math.log(mean) - LOGNORMAL_SIGMA**2 / 2
        stage = Stage("long" if is_long else "short", rng.lognormal(mu, LOGNORMAL_SIGMA, mix.width), ())
        queries.append(Query(arrival, stage.name, (stage,)))
        long.append(is_long)
    return QueryWorkload(tuple(queries), slots, seconds), np.array(long, dtype=bool)


@dataclass(frozen=True)
class StealRun:
    """One run's job responses (seconds) and their replays; `long` marks the long jobs."""

    steal: bool
    seed: int
    long: np.ndarray
    response: np.ndarray
    simulated: np.ndarray  # MODEL_SEEDS replays pooled, each in job order (the run's placement, if `placed`)
    ideal: np.ndarray
    failed: int
    stolen: int  # GetTasks its schedulers answered for stolen reservations (-1: not known)
    simulated_stolen: float = math.nan  # reservations the model stole, the mean over its seeds
    network: float = math.nan  # the model's one-way delay (replay.py's Hops.network)
    timing: StealTiming | None = None  # how long the run's steals took (None: not stealing, or not read)
    placed: bool = False  # `simulated` replays the run's own probe placement
    drawn: np.ndarray | None = None  # MODEL_SEEDS replays pooled with the placement drawn by the model
    gap: float = math.nan  # the late-binding gap the model was given (2 x network)
    inferred_gap: float = math.nan  # the one measure_hops infers from gaps under CHAIN_LIMIT
    gap_pairs: int = 0  # chained pairs `gap` was measured over (placement.py; 0: it is the inferred one)
    round_trip: float = math.nan  # the empty round trip measured (placement.py), beside the model's 2 x network
    round_trips: int = 0
    submission_delay: np.ndarray | None = None  # per job, its submission to its reservations (None: not replayed)
    held: int = 0  # jobs held back behind an earlier one's delayed submission (submissions.py)
    logged_attempts: int = 0  # steal attempts the run's node monitors logged (0: none replayed)
    model_attempts: float = math.nan  # the model's steal attempts, the mean over its seeds
    replayed_attempts: float = math.nan  # ... of them probing a logged attempt's victims (the others drew theirs)
    victims_drawn: np.ndarray | None = None  # the model drawing its steal victims (today's), pooled as `simulated`

    def with_victims_drawn(self) -> StealRun | None:
        """The same run with the model whose thieves drew their own victims as its `simulated` (None: not run)."""
        if self.victims_drawn is None:
            return None
        return replace(self, simulated=self.victims_drawn, victims_drawn=None, replayed_attempts=math.nan)

    def p(
        self, q: float, *, long: bool = False, simulated: bool = False, of_ideal: bool = False, drawn: bool = False
    ) -> float:
        """The q-th percentile of the short (or `long`) jobs' response, as run, simulated (`drawn`: by the model
        drawing its own placement; NaN if not run) or ideal."""
        values = self._model(drawn) if simulated or drawn else self.ideal if of_ideal else self.response
        if values is None:
            return math.nan
        mask = np.tile(self.long, values.size // max(self.long.size, 1)) if simulated or drawn else self.long
        chosen = values[mask if long else ~mask]
        return float(np.percentile(chosen, q)) if chosen.size else math.nan

    def blocked(self, *, simulated: bool = False) -> float:
        """The fraction of the short jobs slower than BLOCKED (as run, or simulated): those that waited behind a
        long task. Near one half, the short p50 lies in the gap between the two kinds of short job, and a point
        more or less of them moves it a lot: this fraction is the better-conditioned figure to compare."""
        values = self.simulated if simulated else self.response
        mask = np.tile(~self.long, values.size // max(self.long.size, 1))
        return float(np.mean(values[mask] > BLOCKED)) if mask.any() else math.nan

    def agreement(self) -> float:
        """The share of short jobs on the same side of BLOCKED in the run and the model, job by job (the mean over
        the model's seeds): whether the model blocks the run's own jobs, not only as many of them (NaN: no model of
        the run's jobs in order, or no short job)."""
        seeds = self.simulated.size // max(self.long.size, 1)
        if not self.placed or seeds * self.long.size != self.simulated.size or self.long.all():
            return math.nan
        run = self.response[~self.long] > BLOCKED
        model = self.simulated.reshape(seeds, -1)[:, ~self.long] > BLOCKED
        return float(np.mean(model == run))

    def model_rank(self) -> float:
        """The model's short p50 as a percentile of the run's short jobs' responses (ties counted half): 50 when it
        is the run's median; its distance from 50 is the model's error in points (module docstring)."""
        run = self.response[~self.long]
        model = self.p(50, simulated=True)
        if not run.size or math.isnan(model):
            return math.nan
        return float(50 * (np.mean(run < model) + np.mean(run <= model)))

    def p50_slope(self) -> float:
        """How far the run's short p50 moves per point of the percentile there, in seconds: (p55 - p45) / 10. A
        point more of the short jobs blocked behind a long task moves the median about that much."""
        return (self.p(55) - self.p(45)) / 10

    def _model(self, drawn: bool) -> np.ndarray | None:
        return self.drawn if drawn else self.simulated

    @property
    def model_seeds(self) -> int:
        return self.simulated.size // max(self.long.size, 1)

    def model_range(self, q: float = 50, *, drawn: bool = False) -> tuple[float, float]:
        """The MODEL_RANGE percentiles, over the model's seeds, of each seed's q-th percentile of the short
        jobs' response (module docstring)."""
        values = self._model(drawn)
        if values is None:
            return math.nan, math.nan
        per_seed = values.reshape(values.size // max(self.long.size, 1), -1)[:, ~self.long]
        if per_seed.size == 0:
            return math.nan, math.nan
        lo, hi = np.percentile(np.percentile(per_seed, q, axis=1), MODEL_RANGE)
        return float(lo), float(hi)

    def seeds_within_target(self) -> float:
        """The share of the model's seeds whose own short p50 is within MODEL_TARGET of the pooled one: how often a
        run that draws what the model's seed draws (the steal victims) would meet the target, if the model is
        right (NaN: no short job)."""
        per_seed = self.simulated.reshape(self.model_seeds, -1)[:, ~self.long]
        pooled = self.p(50, simulated=True)
        if per_seed.size == 0 or math.isnan(pooled):
            return math.nan
        return float(np.mean(np.abs(np.percentile(per_seed, 50, axis=1) / pooled - 1) <= MODEL_TARGET))

    def within_model_range(self, *, drawn: bool = False) -> bool:
        lo, hi = self.model_range(drawn=drawn)
        return lo <= self.p(50) <= hi


def steal_figures(
    records: Sequence[QueryRecord],
    long: np.ndarray,
    *,
    steal: bool,
    seed: int,
    node_monitors: int,
    slots: int,
    schedulers: int,
    stolen: int = -1,
    timing: StealTiming | None = None,
    placement: RunPlacement | None = None,
) -> StealRun:
    """One run's figures (module docstring); `placement`: each job's probed workers in the run (placement.py),
    replayed by the model (None: it draws them), and its measured late-binding gap, which replaces the one
    measure_hops infers where it was measured. Error handling: ValueError if a job did not finish, or if
    `placement` does not give one entry per job."""
    if any(math.isnan(r.finished) for r in records):
        raise ValueError("a job did not finish")
    trace, _ = replay_trace(records)
    if placement is not None and len(placement.probes) != len(trace):
        raise ValueError(f"the placement gives {len(placement.probes)} jobs, the run has {len(trace)}")
    inferred = measure_hops(s for r in records for s in r.submitted_stages())
    hops = inferred
    if placement is not None and not math.isnan(placement.chain_gap):
        hops = replace(inferred, chain_gap=placement.chain_gap)

    submissions = _submissions(records, trace, placement, 2 * hops.network)
    jobs = trace if submissions is None else submissions.jobs

    steal_wait = 0.0 if timing is None else timing.model_wait(hops.network)
    counts: dict[str, float] = {}

    def simulate(replayed: Sequence[ReplayJob], steals: Sequence[StealAttempt] | None = None) -> list[np.ndarray]:
        results = model(
            replayed,
            hops,
            node_monitors=node_monitors,
            slots=slots,
            schedulers=schedulers,
            policy="sparrow_steal" if steal else "sparrow",
            seeds=MODEL_SEEDS,
            steal_wait=steal_wait,
            steals=steals,
        )
        for name in ("stolen", "steal_attempts", "steal_replayed"):
            counts[name] = float(np.mean([r.counters.get(name, 0) for r in results]))
        if submissions is None:
            return [r.job_response for r in results]
        return [submissions.responses(r.job_response) for r in results]

    drawn = simulate(jobs)
    simulated, victims_drawn = drawn, None
    steals = _model_steals(records, placement, submissions, hops, steal_wait, timing) if steal else []
    if placement is not None:
        placed = [replace(job, probes=probes) for job, probes in zip(jobs, placement.probes, strict=True)]
        simulated = simulate(placed)
        if steals:
            victims_drawn, simulated = simulated, simulate(placed, steals)
    return StealRun(
        steal=steal,
        seed=seed,
        long=long,
        response=np.array([r.response for r in records]),
        simulated=np.concatenate(simulated),
        ideal=np.asarray(ideal(trace, node_monitors=node_monitors, slots=slots).job_response),
        failed=sum(r.failed for r in records),
        stolen=stolen,
        simulated_stolen=counts["stolen"],
        network=hops.network,
        timing=timing,
        placed=placement is not None,
        gap=hops.chain_gap,
        inferred_gap=inferred.chain_gap,
        gap_pairs=0 if placement is None or math.isnan(placement.chain_gap) else placement.pairs,
        round_trip=math.nan if placement is None else placement.round_trip,
        round_trips=0 if placement is None else placement.round_trips,
        drawn=np.concatenate(drawn) if placement is not None else None,
        submission_delay=None if submissions is None else submissions.delay,
        held=0 if submissions is None else submissions.held,
        logged_attempts=len(steals),
        model_attempts=counts["steal_attempts"] if steal else math.nan,
        replayed_attempts=counts["steal_replayed"] if steals else math.nan,
        victims_drawn=None if victims_drawn is None else np.concatenate(victims_drawn),
    )


def _model_steals(
    records: Sequence[QueryRecord],
    placement: RunPlacement | None,
    submissions: ReplayedSubmissions | None,
    hops: Hops,
    steal_wait: float,
    timing: StealTiming | None,
) -> list[StealAttempt]:
    """The run's steal attempts on the model's clock (steal_replay.py), [] if none were logged: a run's time t is the
    model's t - origin + submit_delay with each job's submission replayed (submissions.py), else t less the first
    job's arrival; a model's thief probes `steal_wait` after it became idle, the run's `timing.wake` after."""
    if placement is None or not placement.steals:
        return []
    lag = steal_wait - (0.0 if timing is None else timing.wake)
    if submissions is None:
        return on_model_clock(placement.steals, records[0].arrived, lag)
    return on_model_clock(placement.steals, submissions.origin, hops.submit + lag)


def _submissions(
    records: Sequence[QueryRecord], jobs: Sequence[ReplayJob], placement: RunPlacement | None, round_trip: float
) -> ReplayedSubmissions | None:
    """Each job's own submission and dispatch delay replayed (submissions.py), if the placement logs timed every
    job's reservations (None: the model keeps its mean submit_delay for all)."""
    if placement is None or len(placement.sent) != len(jobs) or not np.all(np.isfinite(placement.sent)):
        return None
    submitted = [stage.submitted for r in records for stage in r.submitted_stages()]
    reached = placement.reached if len(placement.reached) == len(jobs) else [math.nan] * len(jobs)
    return replay_submissions(jobs, submitted, dispatch_times(placement.sent, reached, round_trip))


def _count(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:,.0f}"


def _ms(x: float) -> str:
    return "-" if math.isnan(x) else f"{x * 1e3:,.1f}"


def _gap(r: StealRun) -> str:
    inferred = f"inferred {_ms(r.inferred_gap)} ms"
    if not r.gap_pairs:
        return f"{inferred} (not measured: the model used it)"
    trip = (
        f"; an empty GetTask's round trip {_ms(r.round_trip)} ms over {r.round_trips:,}"
        if not math.isnan(r.round_trip)
        else ""
    )
    return f"measured {_ms(r.gap)} ms over {r.gap_pairs:,} pairs (the model's), {inferred}{trip}"


def _submissions_line(r: StealRun) -> str:
    if r.submission_delay is None or not r.submission_delay.size:
        return "not replayed (the placement logs did not time every job)"
    p50, p99 = np.percentile(r.submission_delay, [50, 99])
    held = f"; {r.held} job(s) held behind an earlier one's" if r.held else ""
    return f"p50 {_ms(p50)} ms, p99 {_ms(p99)} ms, longest {_ms(float(r.submission_delay.max()))} ms{held}"


def _points(span: float, slope: float) -> str:
    """How many points of the percentile `span` seconds are at `slope` seconds a point ("-": a flat median)."""
    return "-" if not slope > 0 or math.isnan(span) else f"{span / slope:.1f}"


def _ratio(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def _rank(x: float) -> str:
    return "-" if math.isnan(x) else f"p{x:.1f}"


def _width(span: tuple[float, float]) -> float:
    return span[1] - span[0]


def _span(lo: float, hi: float) -> str:
    return "-" if math.isnan(lo) else f"{_ms(lo)}-{_ms(hi)}"


def table(runs: Sequence[StealRun]) -> str:
    """One row per run: short jobs' p50 and p95 and long jobs' p50, as run and simulated, and the ideal."""
    spread = f"p{MODEL_RANGE[0]}-p{MODEL_RANGE[1]}"
    lines = [
        f"| seed | stealing | short p50 ms | simulated | sim / run | sim p50 at run's | run ms per point "
        f"| model's seeds {spread} | drawn placement "
        f"| drawn / run | drawn seeds {spread} | short p95 ms | simulated | long p50 ms "
        "| simulated | ideal short p50 | reservations stolen | simulated |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        ratio = r.p(50, simulated=True) / r.p(50)
        lo, hi = r.model_range()
        drawn_lo, drawn_hi = r.model_range(drawn=True)
        replayed = "" if r.placed else " (drawn)"
        lines.append(
            f"| {r.seed} | {'on' if r.steal else 'off'} | {_ms(r.p(50))} | {_ms(r.p(50, simulated=True))}{replayed} "
            f"| {ratio:.2f} | {_rank(r.model_rank())} | {_ms(r.p50_slope())} "
            f"| {_span(lo, hi)} | {_ms(r.p(50, drawn=True))} | {_ratio(r.p(50, drawn=True) / r.p(50))} "
            f"| {_span(drawn_lo, drawn_hi)} | {_ms(r.p(95))} | {_ms(r.p(95, simulated=True))} "
            f"| {_ms(r.p(50, long=True))} "
            f"| {_ms(r.p(50, long=True, simulated=True))} | {_ms(r.p(50, of_ideal=True))} "
            f"| {r.stolen if r.stolen >= 0 else '-'} | {_count(r.simulated_stolen)} |"
        )
    return "\n".join(lines)


def verdicts(runs: Sequence[StealRun]) -> list[str]:
    """Sentences from the numbers: stealing's speed-up of the short jobs' p50 per seed, and the model's error."""
    lines = []
    by_seed: dict[int, dict[bool, StealRun]] = {}
    for r in runs:
        by_seed.setdefault(r.seed, {})[r.steal] = r
    speedups = [pair[False].p(50) / pair[True].p(50) for pair in by_seed.values() if len(pair) == 2]
    if speedups:
        met = "met" if min(speedups) >= TARGET_SPEEDUP else "not met"
        lines.append(
            f"Short jobs' p50 response, stealing off / on, same arrivals: {', '.join(f'{s:.2f}x' for s in speedups)} "
            f"(target >= {TARGET_SPEEDUP:g}x: {met})."
        )
    errors = [r.p(50, simulated=True) / r.p(50) - 1 for r in runs]
    if errors:
        worst = max(abs(e) for e in errors)
        met = "met" if worst <= MODEL_TARGET else "not met"
        placed = sum(r.placed for r in runs)
        how = (
            "replaying each run's own probe placement"
            if placed == len(runs)
            else f"replaying the run's probe placement in {placed} of {len(runs)} runs (the others drawn)"
        )
        lines.append(
            f"Simulator against each run at the short jobs' p50, {how}: worst {worst:.0%} off "
            f"(target within {MODEL_TARGET:.0%}: {met}); the mean of the signed errors {np.mean(errors):+.0%}; "
            f"per run {', '.join(f'{e:+.0%}' for e in errors)}."
        )
        drawn = [r.p(50, drawn=True) / r.p(50) - 1 for r in runs if r.drawn is not None]
        if drawn:
            lines.append(
                f"The same model drawing its own placement instead: worst {max(abs(e) for e in drawn):.0%} off, "
                f"mean {np.mean(drawn):+.0%}; per run {', '.join(f'{e:+.0%}' for e in drawn)}."
            )
        lines.append(
            f"Short jobs slower than {BLOCKED:g} s (behind a long task), run / simulated: "
            + ", ".join(f"{r.blocked():.1%} / {r.blocked(simulated=True):.1%}" for r in runs)
            + f"; worst difference {max(abs(r.blocked() - r.blocked(simulated=True)) for r in runs) * 100:.1f} points."
        )
        if any(r.placed for r in runs):
            lines.append(
                "The same short jobs on the same side of it in the run and the model (job by job, replayed placement; "
                "with stealing on, replayed steal victims where the logs have them): "
                + ", ".join("-" if math.isnan(r.agreement()) else f"{r.agreement():.1%}" for r in runs)
                + "."
            )
        ranks = [r.model_rank() for r in runs]
        lines.append(
            "The same error in points: the model's short p50 is the run's "
            + ", ".join(map(_rank, ranks))
            + f" (worst {max(abs(x - 50) for x in ranks):.1f} points from the median); there the run's p50 moves "
            + ", ".join(f"{_ms(r.p50_slope())}" for r in runs)
            + f" ms per point ((p55 - p45) / 10), so that {MODEL_TARGET:.0%} of it is "
            + ", ".join(_points(MODEL_TARGET * r.p(50), r.p50_slope()) for r in runs)
            + " points."
        )
        spread = [r for r in runs if _width(r.model_range()) > 0]  # its seed draws something
        fixed = len(runs) - len(spread)
        lines.append(
            f"Runs within the model's own spread (p{MODEL_RANGE[0]}-p{MODEL_RANGE[1]} of its {runs[0].model_seeds} "
            f"seeds' short p50): {sum(r.within_model_range() for r in spread)} of {len(spread)}"
            + (f" (not counted: {fixed} whose model has no spread, its seed drawing nothing)." if fixed else ".")
        )
        if spread:
            lines.append(
                f"The model's own seeds whose short p50 is within {MODEL_TARGET:.0%} of its pooled one, per run whose "
                "seed draws something (how often a run drawing its steal victims as the model does would meet the "
                "target, the model being right): "
                + ", ".join(f"seed {r.seed} {'on' if r.steal else 'off'} {r.seeds_within_target():.0%}" for r in spread)
                + "."
            )
        lines += _steal_replay_lines(runs)
    return lines


def _steal_replay_lines(runs: Sequence[StealRun]) -> list[str]:
    """How many of the model's steal attempts replayed the run's victims, and the model drawing its own beside it."""
    replayed = [r for r in runs if not math.isnan(r.replayed_attempts)]
    if not replayed:
        return []
    lines = [
        "With stealing on, the model's thieves probed the run's own steal victims (the node monitors' logs, an "
        f"attempt matched within {STEAL_TOLERANCE * 1e3:g} ms of the run's): of the model's attempts (the mean over "
        "its seeds), "
        + ", ".join(
            f"seed {r.seed} {r.replayed_attempts:,.0f} replayed and "
            f"{r.model_attempts - r.replayed_attempts:,.0f} drawn ({r.logged_attempts:,} logged)"
            for r in replayed
        )
        + "."
    ]
    drawn = [(r, r.with_victims_drawn()) for r in replayed]
    pairs = [(r, d) for r, d in drawn if d is not None]
    if pairs:
        lines.append(
            "The same model drawing its own steal victims instead, per run with stealing on: error at "
            "the short p50 "
            + ", ".join(
                f"{d.p(50, simulated=True) / r.p(50) - 1:+.0%} (replayed {r.p(50, simulated=True) / r.p(50) - 1:+.0%})"
                for r, d in pairs
            )
            + "; same side job by job "
            + ", ".join(f"{d.agreement():.1%} (replayed {r.agreement():.1%})" for r, d in pairs)
            + f"; seeds within {MODEL_TARGET:.0%} of its pooled p50 "
            + ", ".join(f"{d.seeds_within_target():.0%} (replayed {r.seeds_within_target():.0%})" for r, d in pairs)
            + f"; seeds' p{MODEL_RANGE[0]}-p{MODEL_RANGE[1]} "
            + ", ".join(f"{_span(*d.model_range())} ms (replayed {_span(*r.model_range())} ms)" for r, d in pairs)
            + "."
        )
    return lines


def render(runs: Sequence[StealRun], *, command: str, setup: str, notes: Sequence[str], mix: Mix = Mix()) -> str:
    """The report page: what was run, the table, the verdicts and the machine's notes."""
    parts = [
        "# Work stealing on a local cluster: short and long jobs mixed at high load",
        "",
        f"Command: `{command}`",
        "",
        setup,
        "",
        f"Jobs of {mix.width} tasks; {mix.long_fraction:.0%} of them long ({mix.long_ms:g} ms tasks), the others "
        f"short ({mix.short_ms:g} ms tasks); the long jobs hold about {mix.long_share:.0%} of the slot "
        "time. Each seed's arrivals run twice, stealing off and on. Simulated: the simulator replaying the "
        f"run's trace with its measured hops and its own probe placement ({MODEL_SEEDS} seeds pooled), each "
        "job's probes in the order its node monitors asked for it (the run's choice among idle ones), sparrow "
        "for off and sparrow_steal for on. What the model is given: each job's arrival (its submission at the "
        "client), each task's run time as its worker measured it, each job's own delay from its submission to its "
        "reservations leaving the scheduler, or where a node monitor idle then asked for it to that GetTask less "
        "the model's two hops for it (the schedulers' logs; submissions.py), the probed node "
        "monitors and their order, the mean late-binding gap, the mean hop of a result back to the client, and with "
        "stealing on the steal timing below and each attempt's victims (the node monitors' logs: "
        "steal_replay.py); what it predicts: when and on which of its probed node monitors each "
        "task runs (with stealing on, whether and which thief takes it), so each job's response. The model's seeds "
        "column: the spread of its seeds' own short p50 (the seed draws what the logs do not give: the victims of "
        "an attempt the run did not make near the model's, and ties; nothing with stealing off). Sim p50 at "
        "run's: the model's short p50 as a percentile of the run's short jobs (p50: no error); run ms per point: "
        "(p55 - p45) / 10 of the run's short jobs, how far its p50 moves per point of them blocked behind a long "
        "task. Drawn placement: the same model drawing the probes itself (its seed draws them): a prediction "
        "without the run's draws (still given each job's submission delay). Response: from a job's submission to "
        "its last outcome at the client.",
        "",
        table(runs),
        "",
        *[f"- {line}" for line in verdicts(runs)],
        "",
        "Where this mix puts the short p50 (on the step between the fast and the blocked short jobs, by "
        "construction) and the other mixes compared in the simulator alone: steal-study.md (`sparrow experiment "
        "steal-study`).",
        "",
        "Late-binding gap per run (a task's end to the next task's start on its slot, the model's 2 x network "
        "delay), measured from the schedulers' logs on the chained pairs (placement.py), beside the "
        "one inferred from gaps under 5 ms, and the round trip alone (a NoTask to the node monitor's next GetTask "
        "for a reservation it held; the model charges it the whole gap):",
        "",
        *[f"- seed {r.seed} {'on' if r.steal else 'off'}: {_gap(r)}" for r in runs],
        "",
        *(
            [
                "Each job's delay from its submission at the client to its reservations leaving the scheduler "
                "(replayed job by job with the GetTask of its first node monitor idle then, where there is one: "
                "the model's submit_delay is the mean; a job whose reservations left or arrived late lands late in "
                "the model's queues too), per run:",
                "",
                *[f"- seed {r.seed} {'on' if r.steal else 'off'}: {_submissions_line(r)}" for r in runs],
                "",
            ]
            if any(r.submission_delay is not None for r in runs)
            else []
        ),
        *(
            [
                "Steals as the runtime timed them (node monitors' metrics), against the model's hops, per run:",
                "",
                *[f"- seed {r.seed}: {r.timing.describe(r.network)}" for r in runs if r.timing is not None],
                "",
            ]
            if any(r.timing is not None for r in runs)
            else []
        ),
        "Machine, per run: " + "; ".join(notes),
        "",
    ]
    return "\n".join(parts)
