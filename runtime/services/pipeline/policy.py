"""The interface of a node monitor's pipelining policy, one mode per file beside this one (off, gated, steady,
jit, always), and what they share: the kernel's rule over the node's recent run times
(`sparrow_core.PipelineRule`, csrc/sparrow/pipeline.h, which the simulator uses too).

The node monitor's logic (node_monitor_logic.py) owns the requests and the bound tasks; a policy answers how many
requests asked ahead plus tasks bound it may hold now (`limit`), whether the half rule bounds them, and, for the
modes that time their requests, when to wake it (`ask_ahead_at`). The logic tells it each run time (`ran`) and,
for jit, when a request asked ahead went and came back."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import ClassVar

import sparrow_core

MAX_PIPELINE_DEPTH = sparrow_core.PIPELINE_MAX_DEPTH  # requests asked ahead or bound per slot held, at most


def check_pipeline_depth(depth: int) -> int:
    """`depth` if it is an int in [1, MAX_PIPELINE_DEPTH], else ValueError naming it."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_PIPELINE_DEPTH:
        raise ValueError(f"pipeline_depth must be an int in [1, {MAX_PIPELINE_DEPTH}], got {depth!r}")
    return depth


def overrunning(started: Collection[float], clock: Callable[[], float]) -> bool:
    """A running task (started at one of `started`) has already run PIPELINE_SHORT_TASK or longer: its end is no
    longer near, so a short node asks nothing ahead behind it (a long task after short ones, a cancelled thread
    task running on)."""
    return bool(started) and min(started) <= clock() - sparrow_core.PIPELINE_SHORT_TASK


class PipelinePolicy:
    """One pipelining mode at one depth: the kernel's rule and the decisions of the mode (subclasses)."""

    mode: ClassVar[str]
    asks_ahead: ClassVar[bool] = True  # off: plain late binding
    times_requests: ClassVar[bool] = False  # jit: the shell wakes the logic at `ask_ahead_at`

    def __init__(self, depth: int) -> None:
        self.depth = check_pipeline_depth(depth)
        self.rule = sparrow_core.PipelineRule(self.mode, depth)
        self.keeps_recent = self.rule.keeps_recent  # the logic times the running tasks for `ran`
        # whether the half rule bounds the requests asked ahead now (deep, or a gated mode): the kernel's answer, its
        # method itself (the logic asks once per task)
        self.half_rule_applies: Callable[[], bool] = self.rule.half_rule_applies

    @property
    def short(self) -> bool:
        """The recent tasks ran short (gated: each of them, else their median; none yet: not)."""
        return self.rule.short_recent

    @property
    def steady(self) -> bool:
        """Steady and jit: the recent run times are steady (and not all short)."""
        return self.rule.steady

    def ran(self, run_time: float) -> None:
        """A task ended here after `run_time` seconds."""
        self.rule.record(run_time)

    def limit(self, held: int, running: int, started: Collection[float], clock: Callable[[], float]) -> int:
        """Requests asked ahead plus tasks bound the node may hold now: `held` slots are running or asking, `running`
        tasks run, started at `started` (`clock` time; only while `keeps_recent`)."""
        raise NotImplementedError

    def ask_ahead_at(self, started: Collection[float], now: float) -> float | None:
        """When (`clock` time) a running task next becomes due to ask ahead; None: no timer needed."""
        return None

    def asked_ahead(self, clock: Callable[[], float]) -> None:
        """A request asked ahead went out now (`clock` tells the time). Called only where `times_requests`."""

    def answered_ahead(self, clock: Callable[[], float], in_flight: int) -> None:
        """A request asked ahead was answered now; `in_flight` are still out. Called only where `times_requests`."""

    def ahead_took_slot(self) -> None:
        """A slot that freed took over the oldest request asked ahead (its answer holds a slot now)."""

    def forget_requests(self) -> None:
        """Which requests are in flight is no longer known (a scheduler was lost)."""
