"""Running the queries on a cluster: one client per scheduler, each query's stages chained by its client.

Query i goes to client i mod (number of schedulers), each client connected to a scheduler of its own,
as the paper's frontends each used one scheduler. At the query's arrival its client submits the
stages that wait for nothing; when a stage's last outcome arrives, the client submits at once (from
the outcome's callback) each stage whose parents have all finished. Every stage is one job of
`demo_task`s sleeping their drawn durations; its JobRecord (demo/workload.py) holds when it was
submitted and finished at the client, and when and on which worker each task started and ended,
all on `time.monotonic()`, one clock for every process of the host. Payloads are packed before the
first query arrives, so packing is not in any measured delay.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import trio

from sparrow_runtime.client.core import Client, JobHandle, build_submit
from sparrow_runtime.demo.task import demo_task
from sparrow_runtime.demo.workload import WARMUP_TASKS_PER_SLOT, JobRecord, Progress
from sparrow_runtime.wire.messages import Outcome
from sparrow_runtime.wire.task_codec import pack_task

from .queries import Query, QueryWorkload


@dataclass
class QueryRecord:
    """One query as it ran: when it arrived (its first stages were submitted), its stages' records
    (None until submitted), and when its last stage finished; the index (in the list of schedulers)
    of the scheduler it went to, and each stage's job id there (None until accepted)."""

    query: Query
    arrived: float = math.nan
    stages: list[JobRecord | None] = field(default_factory=list)
    finished: float = math.nan
    scheduler: int = 0
    handles: list[JobHandle | None] = field(default_factory=list)

    @property
    def job_ids(self) -> list[int | None]:
        """Each stage's job id at its scheduler (None: not submitted, or not accepted yet)."""
        return [None if h is None else h.job_id for h in self.handles]

    @property
    def response(self) -> float:
        return self.finished - self.arrived

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.stages if s is not None)

    def submitted_stages(self) -> list[JobRecord]:
        """Its stages' records, every one submitted (ValueError if one was not: it never finished)."""
        submitted = [s for s in self.stages if s is not None]
        if len(submitted) < len(self.stages):
            raise ValueError(f"the {self.query.template} query at {self.query.arrival:g} s has a stage never submitted")
        return submitted


async def run_queries(
    schedulers: Sequence[str],
    secret: str | bytes,
    workload: QueryWorkload,
    *,
    on_progress: Callable[[Progress], None] = lambda p: None,
    progress_interval: float = 0.1,
) -> list[QueryRecord]:
    """Run `workload` on the cluster of `schedulers` (after a warm-up job per client of a few tasks
    per slot, not recorded); returns its queries in arrival order. `on_progress` (jobs: queries)
    is called every `progress_interval` seconds and once at the end."""
    progress = Progress(len(workload.queries), workload.n_tasks)
    packed = [
        [[pack_task(demo_task, (d,)) for d in stage.durations.tolist()] for stage in q.stages] for q in workload.queries
    ]
    n_clients = len(schedulers)
    records = [
        QueryRecord(q, stages=[None] * len(q.stages), scheduler=i % n_clients, handles=[None] * len(q.stages))
        for i, q in enumerate(workload.queries)
    ]
    all_done = trio.Event()
    async with trio.open_nursery() as nursery:
        clients = [await nursery.start(_open_client, address, secret) for address in schedulers]
        async with trio.open_nursery() as warming:
            for client in clients:
                warming.start_soon(_warm_up, client, workload.slots)

        def submit(client: Client, i: int, s: int) -> None:
            record, payloads = records[i], packed[i][s]
            msg = build_submit(payloads, "", 0, None, None)
            stage = record.stages[s] = JobRecord.submitted_now(len(payloads))
            record.handles[s] = client.send_job(msg, partial(on_outcome, client, i, s, stage))

        def on_outcome(client: Client, i: int, s: int, stage: JobRecord, task: int, outcome: Outcome) -> None:
            failed = stage.failed
            complete = stage.on_outcome(task, outcome)
            progress.tasks_failed += stage.failed - failed
            progress.tasks_done += 1
            if not complete:
                return
            record = records[i]
            finished = [r is not None and not math.isnan(r.finished) for r in record.stages]
            for child, child_stage in enumerate(record.query.stages):
                if record.stages[child] is None and all(finished[p] for p in child_stage.parents):
                    submit(client, i, child)
            if all(finished):
                record.finished = stage.finished
                progress.jobs_done += 1
                if progress.jobs_done == progress.jobs_total:
                    all_done.set()

        async def report() -> None:
            while True:
                on_progress(progress)
                await trio.sleep(progress_interval)

        nursery.start_soon(report)
        start = trio.current_time()
        for i, query in enumerate(workload.queries):
            await trio.sleep_until(start + query.arrival)
            client = clients[i % len(clients)]
            records[i].arrived = time.monotonic()
            for s, stage in enumerate(query.stages):
                if not stage.parents:
                    submit(client, i, s)
            progress.jobs_submitted += 1
        if workload.queries:
            await all_done.wait()
        nursery.cancel_scope.cancel()
    on_progress(progress)
    return records


async def _open_client(
    address: str, secret: str | bytes, task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED
) -> None:
    """A Client of the scheduler at `address` alone, open until cancelled."""
    async with Client([address], secret=secret) as client:
        task_status.started(client)
        await trio.sleep_forever()


async def _warm_up(client: Client, slots: int) -> None:
    await (await client.submit_job([partial(demo_task, 0.0)] * (slots * WARMUP_TASKS_PER_SLOT))).results()
