"""OutcomeBatcher: a client's task outcomes share writes, a job's last outcome never waits."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from sparrow_runtime import (
    Client,
    LinkConfig,
    LocalCluster,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.outcome_batching import OutcomeBatcher
from sparrow_runtime.wire.messages import (
    EnqueueReservations,
    GetTask,
    Heartbeat,
    JobAccepted,
    JobRejected,
    Outcome,
    OutcomeToClient,
    OutcomeToScheduler,
    TaskStarted,
)


class Peer:
    """Records each write (one `send_many` call) it gets."""

    def __init__(self, role: str) -> None:
        self.peer_role = role
        self.writes: list[list] = []

    def send(self, msg) -> None:
        self.send_many([msg])

    def send_many(self, msgs) -> None:
        self.writes.append(list(msgs))

    def send_later(self, msgs) -> None:
        self.writes.append(["later", *msgs])


def outcome(task: int, last: bool = False) -> OutcomeToClient:
    return OutcomeToClient(1, task, Outcome(True, b"", ""), last)


def test_outcomes_wait_for_the_delay_then_go_in_one_write(autojump_clock):
    async def main():
        client, node = Peer("client"), Peer("node-monitor")
        batcher = OutcomeBatcher(0.001)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            batcher.send([(client, outcome(0)), (node, EnqueueReservations(1, "", 0, 1))])
            assert (
                node.writes == [[EnqueueReservations(1, "", 0, 1)]] and client.writes == []
            )  # node monitors never wait
            await trio.sleep(0.0006)
            batcher.send([(client, outcome(1))])
            assert client.writes == []
            await trio.sleep(0.0005)  # 1.1 ms after the first was held
            assert client.writes == [[outcome(0), outcome(1)]]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_no_outcome_waits_longer_than_the_delay(autojump_clock):
    async def main():
        client = Peer("client")
        batcher = OutcomeBatcher(0.001)
        sent_at: dict[int, float] = {}
        held_at: dict[int, float] = {}

        def record(msgs) -> None:
            for msg in msgs:
                sent_at[msg.task] = trio.current_time()

        client.send_many = record
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            for task in range(40):
                held_at[task] = trio.current_time()
                batcher.send([(client, outcome(task, last=task % 13 == 12))])
                await trio.sleep(0.0003 * (task % 5))
            await trio.sleep(0.002)
            nursery.cancel_scope.cancel()
        assert sorted(sent_at) == list(range(40))
        assert max(sent_at[t] - held_at[t] for t in range(40)) <= 0.001 + 1e-9
        assert all(sent_at[t] == held_at[t] for t in range(12, 40, 13))  # a job's last outcome at once

    trio.run(main, clock=autojump_clock)


def test_no_flush_is_due_once_a_jobs_last_outcome_took_what_was_held(autojump_clock):
    """What a job's last outcome took along leaves nothing to flush: the batcher's task does not wake for it
    (a 10-task job finishing within the delay costs one write and no timer), and the next message held waits
    its own full delay at most."""

    async def main():
        client = Peer("client")
        batcher = OutcomeBatcher(0.001)
        flushes = []
        flush = batcher.flush
        batcher.flush = lambda: (flushes.append(trio.current_time()), flush())  # type: ignore[method-assign]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            await trio.lowlevel.checkpoint()
            batcher.send([(client, JobAccepted(1, 7))])
            await trio.sleep(0.0005)
            batcher.send([(client, outcome(0, last=True))])
            await trio.sleep(0.01)
            assert flushes == [] and client.writes == [[JobAccepted(1, 7), outcome(0, last=True)]]
            held_at = trio.current_time()
            batcher.send([(client, outcome(1))])
            await trio.sleep(0.01)
            assert flushes == [held_at + 0.001] and client.writes[1:] == [[outcome(1)]]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_a_jobs_last_outcome_and_any_other_message_flush_what_is_held_first_in_order():
    client, other = Peer("client"), Peer("client")
    batcher = OutcomeBatcher(10.0)
    batcher.send([(client, outcome(0)), (other, outcome(5)), (client, outcome(1))])
    assert client.writes == [] and other.writes == []
    batcher.send([(client, outcome(2, last=True))])
    assert client.writes == [[outcome(0), outcome(1), outcome(2, last=True)]] and other.writes == []
    batcher.send([(other, JobRejected(3, "no"))])
    assert other.writes == [[outcome(5), JobRejected(3, "no")]]


def test_a_job_accepted_waits_with_the_outcomes_and_goes_ahead_of_them(autojump_clock):
    """JobAccepted is held like an outcome: alone it goes after the delay; with the job's outcomes it goes first,
    in the write of the job's last outcome (at once); forgetting the client drops it."""

    async def main():
        client, gone = Peer("client"), Peer("client")
        batcher = OutcomeBatcher(0.001)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            batcher.send([(client, JobAccepted(1, 7)), (gone, JobAccepted(2, 8))])
            assert client.writes == [] and gone.writes == []
            batcher.forget(gone)
            await trio.sleep(0.0011)
            assert client.writes == [[JobAccepted(1, 7)]] and gone.writes == []
            batcher.send([(client, JobAccepted(3, 9)), (client, outcome(0))])
            batcher.send([(client, outcome(1, last=True))])
            assert client.writes[1:] == [[JobAccepted(3, 9), outcome(0), outcome(1, last=True)]]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_a_task_started_is_dropped_when_its_outcome_passes_first(autojump_clock):
    """A TaskStarted whose task ends within the period (its outcome passes, held or sent at once) is never
    sent: the outcome says more, and a short task costs no frame to tell its start."""

    async def main():
        client = Peer("client")
        batcher = OutcomeBatcher(0.001)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            batcher.send([(client, TaskStarted(1, 0)), (client, TaskStarted(1, 1))])
            batcher.send([(client, outcome(0))])
            batcher.send([(client, outcome(1, last=True))])
            await trio.sleep(0.01)  # several periods
            assert client.writes == [[outcome(0), outcome(1, last=True)]]
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_a_task_still_running_after_a_full_period_is_told_started_before_its_outcome(autojump_clock):
    """A TaskStarted is sent at the first flush after a whole period without the task's outcome (between one
    and two periods after it was handed out), ahead of that outcome; a gone client's starts are dropped."""

    async def main():
        client, gone = Peer("client"), Peer("client")
        batcher = OutcomeBatcher(0.001)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(batcher.run)
            batcher.send([(client, TaskStarted(1, 0)), (gone, TaskStarted(2, 0))])
            batcher.forget(gone)
            await trio.sleep(0.0011)  # the first flush: held less than a period
            assert client.writes == []
            batcher.send([(client, TaskStarted(1, 1))])  # handed out in the second period
            await trio.sleep(0.001)  # the second flush
            assert client.writes == [[TaskStarted(1, 0)]]
            batcher.send([(client, outcome(0, last=True))])
            await trio.sleep(0.001)  # the third: task 1 ran through a whole period
            assert client.writes == [[TaskStarted(1, 0)], [outcome(0, last=True)], [TaskStarted(1, 1)]]
            batcher.send([(client, outcome(1, last=True))])
            await trio.sleep(0.01)
            assert client.writes[3:] == [[outcome(1, last=True)]] and gone.writes == []
            nursery.cancel_scope.cancel()

    trio.run(main, clock=autojump_clock)


def test_may_wait_chooses_what_is_held_and_later_goes_through_to_the_links():
    """With `may_wait` (a pipelined node monitor's rule) only what it allows is held; the first message
    that may not wait takes what is held for its peer along, in order, in one write (send_later's when
    `later`)."""
    scheduler = Peer("scheduler")
    done = OutcomeToScheduler(1, 0, Outcome(True, b"", ""))
    batcher = OutcomeBatcher(10.0, may_wait=lambda msg: type(msg) in (GetTask, OutcomeToScheduler))
    batcher.send([(scheduler, done), (scheduler, GetTask(1))])
    assert scheduler.writes == []
    batcher.send([(scheduler, Heartbeat(0, 1))], later=True)
    assert scheduler.writes == [["later", done, GetTask(1), Heartbeat(0, 1)]]


def test_delay_zero_sends_everything_at_once_and_forget_drops_a_gone_client():
    client = Peer("client")
    OutcomeBatcher(0).send([(client, outcome(0)), (client, outcome(1))])
    assert client.writes == [[outcome(0), outcome(1)]]
    batcher = OutcomeBatcher(1.0)
    batcher.send([(client, outcome(2))])
    batcher.forget(client)
    batcher.flush()
    assert client.writes == [[outcome(0), outcome(1)]]


@pytest.mark.parametrize("delay", [-0.001, float("nan"), float("inf"), "1ms", True])
def test_bad_delay_is_refused_before_anything_starts(delay):
    with pytest.raises(ValueError, match="result_delay must be a number of seconds >= 0"):
        OutcomeBatcher(delay)
    with pytest.raises(ValueError, match="result_delay must be a number of seconds >= 0"):
        LocalCluster(scheduler=SchedulerConfig(result_delay=delay))
    with pytest.raises(ValueError, match="result_delay must be a number of seconds >= 0"):
        SchedulerConfig(link=LinkConfig(secret="s"), result_delay=delay)


def test_a_job_completes_at_once_even_with_a_long_delay_over_loopback():
    """With a 30 s delay, a job's outcomes all arrive with its last one, long before the delay."""

    async def main():
        async with trio.open_nursery() as nursery:
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret="s"), result_delay=30.0))
            )
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(link=LinkConfig(secret="s"), schedulers=[address], slots=1, executor="thread"),
                )
            )
            async with Client([address], secret="s") as client:
                with trio.fail_after(10):
                    job = await client.submit_job([partial(pow, 3, i) for i in range(6)])
                    arrivals = [o.index async for o in job.as_completed()]
                assert sorted(arrivals) == list(range(6)) and await job.results() == [3**i for i in range(6)]
            nursery.cancel_scope.cancel()

    trio.run(main)
