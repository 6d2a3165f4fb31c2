"""Scheduler, node monitors and clients as trio services in one nursery, over real loopback TCP."""

import dataclasses
import time
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    Constraint,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    TaskFailed,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic

SECRET = "test-secret"
SCHEDULER = SchedulerConfig(link=LinkConfig(secret=SECRET))


@asynccontextmanager
async def services(n_nodes=2, slots=1, labels=None, probe_ratio=2.0, client_grace=2.0, **node_options):
    """A scheduler and `n_nodes` thread-executor node monitors on loopback, not pipelining (`node_options`: more
    of NodeMonitorConfig's fields); yields (address, scheduler logic, node logics)."""
    async with trio.open_nursery() as nursery:
        scheduler = SchedulerLogic(seed=3, probe_ratio=probe_ratio, client_grace=client_grace)
        address = await nursery.start(partial(serve_scheduler, SCHEDULER, logic=scheduler))
        nodes = []
        for i in range(n_nodes):
            logic = NodeMonitorLogic(
                NodeMonitorConfig(slots=slots, pipeline="off")
            )  # plain late binding: these tests count its messages
            nodes.append(logic)
            node = NodeMonitorConfig(
                link=LinkConfig(secret=SECRET),
                schedulers=[address],
                node_id=f"nm{i}",
                executor="thread",
                labels=labels[i] if labels else (),
                **node_options,
            )
            await nursery.start(partial(serve_node_monitor, node, logic=logic))
        yield address, scheduler, nodes
        nursery.cancel_scope.cancel()


def _fail_if_odd(x):
    if x % 2:
        raise KeyError(x)
    return x


def test_every_task_gets_one_outcome_at_the_right_client():
    """Two clients submit concurrently; each gets exactly its own values and exceptions."""

    async def main():
        async with services() as (address, scheduler, _):
            got = {}

            async def run(name, offset):
                async with Client([address], secret=SECRET) as client:
                    job = await client.submit_job([partial(_fail_if_odd, offset + i) for i in range(30)], user=name)
                    got[name] = await job.outcomes()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run, "a", 0)
                nursery.start_soon(run, "b", 1000)
            for name, offset in (("a", 0), ("b", 1000)):
                outcomes = got[name]
                assert [o.index for o in outcomes] == list(range(30))
                assert [o.value for o in outcomes if o.ok] == [offset + i for i in range(0, 30, 2)]
                assert [o.exception.args for o in outcomes if not o.ok] == [(offset + i,) for i in range(1, 30, 2)]
            assert scheduler.stats["outcomes"] == 60 and not scheduler.jobs

    trio.run(main)


def test_results_arrive_as_tasks_finish():
    async def main():
        async with services() as (address, _, _), Client([address], secret=SECRET) as client:
            job = await client.submit_job([partial(pow, 2, i) for i in range(8)])
            seen = [outcome.index async for outcome in job.as_completed()]
            assert sorted(seen) == list(range(8))
            assert await job.results() == [2**i for i in range(8)]

    trio.run(main)


def test_each_task_of_a_generated_job_gets_its_own_payload():
    """The client pickles a callable repeated in a job once (by id): temporaries from a generator,
    freed as it goes, must not be taken for one another."""

    async def main():
        async with services() as (address, _, _), Client([address], secret=SECRET) as client:
            shared = partial(pow, 3, 2)
            job = await client.submit_job(x for i in range(10) for x in (partial(pow, 2, i), shared))
            assert await job.results() == [v for i in range(10) for v in (2**i, 9)]

    trio.run(main)


def test_job_constraint_by_label_is_respected():
    async def main():
        async with services(n_nodes=3, labels=[[], ["gpu"], []]) as (address, _, nodes):
            async with Client([address], secret=SECRET) as client:
                job = await client.submit_job([int] * 20, constraints=Constraint(labels=("gpu",)))
                await job.results()
            assert [n.stats["launched"] for n in nodes] == [0, 20, 0]

    trio.run(main)


def test_per_task_constraints_by_node_id_are_respected():
    async def main():
        async with services(n_nodes=3) as (address, _, nodes):
            async with Client([address], secret=SECRET) as client:
                where = [Constraint(node_monitors=("nm2",)), None, Constraint(node_monitors=("nm2",)), None]
                job = await client.submit_job([int] * 4, constraints=where)
                await job.results()
            assert nodes[2].stats["launched"] >= 2
            assert sum(n.stats["launched"] for n in nodes) == 4

    trio.run(main)


def test_leftover_reservations_are_cancelled_no_get_task_storm():
    """20 jobs x 20 tasks at d = 2 leave 400 spare reservations; cancellation keeps empty answers rare."""

    async def main():
        async with services() as (address, scheduler, nodes):
            async with Client([address], secret=SECRET) as client:
                for _ in range(20):
                    job = await client.submit_job([int] * 20)
                    await job.results()
            await trio.sleep(0.05)  # let the last cancellations land
            assert scheduler.stats["probes"] == 800
            assert scheduler.stats["cancel_messages"] >= 20
            # without cancellation every spare reservation would come back as an empty GetTask (400)
            assert scheduler.stats["no_task"] <= 2 * 20
            assert [len(n.queue) for n in nodes] == [0, 0]

    trio.run(main)


def test_unplaceable_job_fails_instead_of_hanging():
    async def main():
        async with services(n_nodes=1) as (address, _, _), Client([address], secret=SECRET) as client:
            job = await client.submit_job([int] * 3, constraints=Constraint(node_monitors=("nowhere",)))
            with pytest.raises(TaskFailed, match="satisfies the job's constraint"):
                await job.results()

    trio.run(main)


def test_invalid_arguments_are_refused_before_sending():
    async def main():
        async with services(n_nodes=1) as (address, _, _), Client([address], secret=SECRET) as client:
            with pytest.raises(ValueError, match="probe_ratio"):
                await client.submit_job([int], probe_ratio=0.5)
            with pytest.raises(ValueError, match="constraints has 1 entries for 2 tasks"):
                await client.submit_job([int, int], constraints=[None])
            with pytest.raises(ValueError, match="at least one task"):
                await client.submit_job([])

    trio.run(main)


def test_scheduler_can_dial_a_node_monitor_instead():
    """A node monitor started without schedulers serves one that dials it (SchedulerConfig(node_monitors=...))."""

    async def main():
        async with trio.open_nursery() as nursery:
            node = await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret=SECRET), schedulers=[], executor="thread", slots=1),
                )
            )
            scheduler = SchedulerLogic(seed=1)
            address = await nursery.start(
                partial(serve_scheduler, dataclasses.replace(SCHEDULER, node_monitors=[node]), logic=scheduler)
            )
            with trio.fail_after(10):
                while not scheduler.nodes:
                    await trio.sleep(0.01)
            async with Client([address], secret=SECRET) as client:
                assert await (await client.submit_job([partial(abs, -i) for i in range(5)])).results() == list(range(5))
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_client_whose_only_scheduler_is_gone_fails_its_unfinished_tasks_saying_so():
    async def main():
        async with trio.open_nursery() as nursery:
            scheduler_scope = trio.CancelScope()

            async def scheduler(task_status=trio.TASK_STATUS_IGNORED):
                with scheduler_scope:
                    await serve_scheduler(SCHEDULER, task_status=task_status)

            address = await nursery.start(scheduler)
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret=SECRET), schedulers=[address], executor="thread", slots=1),
                )
            )
            async with Client([address], secret=SECRET) as client:
                job = await client.submit_job([partial(time.sleep, 1)] * 3)
                scheduler_scope.cancel()
                outcomes = await job.outcomes()
            failed = [o for o in outcomes if not o.ok]
            assert failed and all(isinstance(o.exception, TaskFailed) for o in failed)
            assert all("no scheduler reachable" in str(o.exception) for o in failed), failed
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_draining_node_monitor_finishes_its_task_while_new_jobs_run_elsewhere():
    async def main():
        async with trio.open_nursery() as nursery:
            scheduler = SchedulerLogic(seed=5)
            address = await nursery.start(partial(serve_scheduler, SCHEDULER, logic=scheduler))
            leaving, drain = NodeMonitorLogic(NodeMonitorConfig(slots=1)), trio.Event()
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(
                        link=LinkConfig(secret=SECRET), schedulers=[address], node_id="leaving", executor="thread"
                    ),
                    logic=leaving,
                    drain=drain,
                )
            )
            staying = NodeMonitorLogic(NodeMonitorConfig(slots=1))
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(
                        link=LinkConfig(secret=SECRET), schedulers=[address], node_id="staying", executor="thread"
                    ),
                    logic=staying,
                )
            )
            async with Client([address], secret=SECRET) as client:
                slow = await client.submit_job(
                    [partial(time.sleep, 0.5)], constraints=Constraint(node_monitors=("leaving",))
                )
                with trio.fail_after(10):
                    while not leaving.busy:
                        await trio.sleep(0.005)
                    drain.set()
                    while not scheduler.stats["node_monitors_draining"]:  # told at once, not at a heartbeat
                        await trio.sleep(0.005)
                    jobs = [await client.submit_job([partial(abs, -i)] * 4) for i in range(6)]
                    assert [await job.results() for job in jobs] == [[i] * 4 for i in range(6)]
                    assert await slow.results() == [None]  # the task it had started finished and reported
            assert leaving.stats["launched"] == 1 and staying.stats["launched"] == 24 and leaving.busy == 0
            nursery.cancel_scope.cancel()

    trio.run(main)
