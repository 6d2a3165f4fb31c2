"""Gated: pipelined late binding only while the node's tasks all ran short.

Model: as "always", a busy slot asks ahead and the task that answers waits bound for a slot. Assumptions: a task
bound ahead costs nothing only if the one before it ends soon; each of the node's last PIPELINE_RECENT run times
under PIPELINE_SHORT_TASK says so (the median would open the gate for 16% of the workers of exponential 10 ms
tasks; each of the last 8: 0.06%). Algorithm: the kernel's rule in mode "gated": no request ahead until a task
ended here, none while any recent one ran long or a running task has already run PIPELINE_SHORT_TASK (it
overran); otherwise one per running task, or `depth` per slot held (short tasks are also deep), and the half
rule always: at most half of what the node holds of the head job, so a node holding one reservation of a job
(batch sampling at scale) asks none of it ahead and late binding places it."""

from __future__ import annotations

from collections.abc import Callable, Collection

from .policy import PipelinePolicy, overrunning


class Gated(PipelinePolicy):
    mode = "gated"

    def limit(self, held: int, running: int, started: Collection[float], clock: Callable[[], float]) -> int:
        rule = self.rule
        if not rule.gate_open(rule.short_recent and overrunning(started, clock)):
            return 0
        return rule.ahead_limit(held, running)
