"""Always: pipelined late binding without the gate.

Model: while every slot is busy and reservations wait, each running task's slot asks one task ahead; a task that
answers waits bound until a slot frees, so the round trip overlaps the running task. Assumptions: the running
task's end is near enough that binding the next task behind it costs less than a round trip (true of tasks far
shorter than it, or of equal length; a task bound behind a long one waits it out: varied 10 ms tasks 1.1-6x at
p50 in the simulator). Algorithm: the kernel's rule in mode "always": one request ahead per running task
whatever the tasks' length, `depth` per slot held while the median recent run time is under
PIPELINE_SHORT_TASK (deep); the half rule bounds only a deep pipeline."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .policy import PipelinePolicy


class Always(PipelinePolicy):
    mode = "always"

    def limit(self, held: int, running: int, started: Collection[float], clock: Callable[[], float]) -> int:
        return self.rule.ahead_limit(held, running)
