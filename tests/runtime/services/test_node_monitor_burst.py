"""The node monitor's bursts (burst.py, NodeMonitorService._route / _flush) with a real worker process: a job's
tasks bound to it at once reach its worker in one write, and the outcomes its worker answered while the node
monitor was busy (one read) reach the scheduler in one write."""

from __future__ import annotations

import time

import trio

from sparrow_runtime.services.config import NodeMonitorConfig
from sparrow_runtime.services.node_monitor import NodeMonitorService
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.worker_pool import ProcessExecutor
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import OutcomeToScheduler, TaskToNode
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

from .test_worker_hand_ahead import _spy_writes


class _Scheduler:
    """A scheduler's connection as the node monitor sees it: each write kept as the list of its messages."""

    peer_role = "scheduler"

    def __init__(self) -> None:
        self.writes: list[list] = []

    def send(self, msg) -> None:
        self.writes.append([msg])

    def send_many(self, msgs) -> None:
        self.writes.append(list(msgs))

    send_later = send_many


def test_a_job_bound_whole_costs_one_write_to_the_worker_and_one_back_to_the_scheduler() -> None:
    """5 tasks bound unasked to an idle 1-slot node monitor: one launched, 4 handed ahead, all in one write to
    the worker; the node monitor then blocks while the worker runs them, so their 5 outcomes come in one read
    and leave in one write (before bursts: 5 writes to the worker, and the outcomes in 2, the last alone once
    no task was bound)."""

    async def main() -> None:
        logic = NodeMonitorLogic(NodeMonitorConfig(slots=1, pipeline="gated", pipeline_depth=1))
        scheduler = _Scheduler()
        logic.on_scheduler_registered(scheduler)
        executor = ProcessExecutor(1)
        async with trio.open_nursery() as nursery:
            await executor.start(nursery)
            service = NodeMonitorService(logic, executor, nursery, link=LinkConfig(secret=b"s"), node_id="nm")
            nursery.start_soon(service.outgoing.run)
            to_worker = _spy_writes(executor)
            tasks = [TaskToNode(1, i, pack_task(abs, (-i,)), bound=True, user="u") for i in range(5)]
            service._route(logic.on_scheduler_messages(scheduler, tasks))  # as a scheduler's read is handled
            assert [len(w) for w in to_worker] == [5]
            time.sleep(0.5)  # noqa: ASYNC251 (the point: the loop blocked: the worker answers all 5 meanwhile, read at once below)
            with trio.fail_after(20):
                while sum(len(w) for w in scheduler.writes) < 5:
                    await trio.sleep(0.01)
            assert len(scheduler.writes) == 1
            outcomes = scheduler.writes[0]
            assert all(type(m) is OutcomeToScheduler for m in outcomes)
            assert [(m.task, unpack_outcome(m.outcome)) for m in outcomes] == [(i, i) for i in range(5)]
            await executor.aclose()
            nursery.cancel_scope.cancel()

    trio.run(main)
