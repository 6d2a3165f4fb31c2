"""Tasks handed ahead to a busy worker process (ProcessExecutor.hand_ahead, worker_main.serve's queue): each
starts as the one before it ends, a withdrawn one never starts, and a worker that dies or is killed gives its
queued tasks back unstarted. Real worker processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import trio

from sparrow_runtime.services import worker_pool
from sparrow_runtime.services.worker_pool import ProcessExecutor, Ticket
from sparrow_runtime.wire.messages import SYSTEM, TIMED_OUT, Outcome
from sparrow_runtime.wire.task_codec import pack_task, unpack_outcome

from .test_worker_pool import _with_executor


def _mark(path: str, value: int, nap: float = 0.0) -> int:
    """Append this process's id to `path` (it ran here), nap, return `value`."""
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(nap)
    return value


def _die(path: str) -> None:
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(0.2)
    os._exit(3)


class _Driver:
    """What a node monitor does with an executor's tickets: a successor of a finished ticket is adopted
    (it started); every outcome is kept by name, in the order they came."""

    def __init__(self, executor: ProcessExecutor) -> None:
        self.executor = executor
        self.outcomes: list[tuple[str, Outcome]] = []
        self.returned: list[str] = []
        executor.returned = lambda tickets: self.returned.extend(t.tag for t in tickets)

    def done(self, name: str, ticket_box: list[Ticket], outcome: Outcome) -> None:
        self.outcomes.append((name, outcome))
        successor = ticket_box[0].successor
        if successor is not None:
            box = [successor]
            self.executor.adopt(successor, lambda o: self.done(successor.tag, box, o))

    def launch(self, name: str, payload: bytes) -> Ticket:
        box: list[Ticket] = []
        box.append(self.executor.launch(payload, lambda o: self.done(name, box, o)))
        return box[0]

    def ahead(self, name: str, payload: bytes) -> Ticket:
        ticket = self.executor.hand_ahead(payload, name)
        assert ticket is not None
        return ticket

    async def wait_for(self, count: int) -> None:
        with trio.fail_after(20):
            while len(self.outcomes) + len(self.returned) < count:
                await trio.sleep(0.01)


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_tasks_handed_ahead_run_in_order_on_the_same_worker_one_outcome_each(tmp_path: Path) -> None:
    """A running task and 3 handed ahead behind it: each starts as the one before it ends (its ticket the
    successor), all on the same worker process, each with one outcome, in order; nothing is handed ahead
    to an idle pool."""

    async def body(executor: ProcessExecutor) -> None:
        assert executor.hand_ahead(pack_task(abs, (-1,)), "none") is None  # idle: nothing to queue behind
        drive = _Driver(executor)
        marks = tmp_path / "marks"
        drive.launch("r", pack_task(_mark, (str(marks), 0, 0.3)))
        for i in (1, 2, 3):
            drive.ahead(f"a{i}", pack_task(_mark, (str(marks), i)))
        await drive.wait_for(4)
        assert [name for name, _ in drive.outcomes] == ["r", "a1", "a2", "a3"]
        assert [unpack_outcome(o) for _, o in drive.outcomes] == [0, 1, 2, 3]
        assert len(set(_lines(marks))) == 1 and len(_lines(marks)) == 4  # one worker, each ran once
        assert drive.returned == [] and executor.restarts == 0

    trio.run(_with_executor, "process", body)


def _spy_writes(executor: ProcessExecutor) -> list[list]:
    """The bursts of messages the executor writes to its (one) worker, one list per write."""
    (worker,) = executor._workers
    writes: list[list] = []
    send_many = worker.conn.send_many
    worker.conn.send = lambda msg: (writes.append([msg]), send_many([msg]))[1]  # type: ignore[method-assign]
    worker.conn.send_many = lambda msgs: (writes.append(list(msgs)), send_many(msgs))[1]  # type: ignore[method-assign]
    return writes


def test_a_launch_and_the_tasks_handed_ahead_behind_it_in_one_burst_reach_the_worker_in_one_write(
    tmp_path: Path,
) -> None:
    """What a node monitor does with a job's tasks bound to it at once, under the executor's burst: the launch and
    3 tasks handed ahead go in one write (each was a write of its own before: burst.py), and run in order."""

    async def body(executor: ProcessExecutor) -> None:
        writes = _spy_writes(executor)
        drive = _Driver(executor)
        with executor.burst:
            drive.launch("r", pack_task(abs, (0,)))
            for i in (1, 2, 3):
                drive.ahead(f"a{i}", pack_task(abs, (-i,)))
            assert writes == []  # held until the burst ends
        assert [len(w) for w in writes] == [4]
        await drive.wait_for(4)
        assert [(name, unpack_outcome(o)) for name, o in drive.outcomes] == [("r", 0), ("a1", 1), ("a2", 2), ("a3", 3)]

    trio.run(_with_executor, "process", body)


def test_a_task_withdrawn_in_the_burst_that_handed_it_ahead_never_starts(tmp_path: Path) -> None:
    """Its DropTask waits in the same burst, behind the task it names (sent at once, it would reach the worker
    before the task and be ignored, and the task would run)."""

    async def body(executor: ProcessExecutor) -> None:
        writes = _spy_writes(executor)
        drive = _Driver(executor)
        with executor.burst:
            drive.launch("r", pack_task(_mark, (str(tmp_path / "r"), 0, 0.2)))
            withdrawn = drive.ahead("a1", pack_task(_mark, (str(tmp_path / "a1"), 1)))
            drive.ahead("a2", pack_task(_mark, (str(tmp_path / "a2"), 2)))
            executor.withdraw(withdrawn)
        assert [[type(m).__name__ for m in w] for w in writes] == [["TaskToWorker"] * 3 + ["DropTask"]]
        await drive.wait_for(2)
        await trio.sleep(0.2)  # time for a wrong outcome of a1 to come
        assert [name for name, _ in drive.outcomes] == ["r", "a2"]
        assert not (tmp_path / "a1").exists() and executor.restarts == 0

    trio.run(_with_executor, "process", body)


def test_a_withdrawn_task_queued_in_its_worker_never_starts_and_the_ones_behind_it_run(tmp_path: Path) -> None:
    """Withdrawing the middle one of 3 tasks handed ahead (its worker still runs the first): it is dropped
    unstarted, reports nothing, and the worker goes on with the third; no worker is killed."""

    async def body(executor: ProcessExecutor) -> None:
        drive = _Driver(executor)
        drive.launch("r", pack_task(_mark, (str(tmp_path / "r"), 0, 0.4)))
        drive.ahead("a1", pack_task(_mark, (str(tmp_path / "a1"), 1)))
        withdrawn = drive.ahead("a2", pack_task(_mark, (str(tmp_path / "a2"), 2)))
        drive.ahead("a3", pack_task(_mark, (str(tmp_path / "a3"), 3)))
        await trio.sleep(0.1)  # r runs
        executor.withdraw(withdrawn)
        await drive.wait_for(3)
        await trio.sleep(0.2)  # time for a wrong outcome of a2 to come
        assert [name for name, _ in drive.outcomes] == ["r", "a1", "a3"]
        assert not (tmp_path / "a2").exists() and len(_lines(tmp_path / "a3")) == 1
        assert executor.restarts == 0

    trio.run(_with_executor, "process", body)


def test_a_worker_that_dies_fails_its_task_once_and_gives_back_the_ones_queued_unstarted(tmp_path: Path) -> None:
    """The running task kills its own worker with 2 tasks handed ahead behind it: it fails (SYSTEM, once),
    the 2 are given back (`returned`) without starting and without an outcome, and a replacement runs the
    next task (`started` names it if it waited for the replacement: its timeout starts then)."""

    async def body(executor: ProcessExecutor) -> None:
        drive = _Driver(executor)
        drive.launch("r", pack_task(_die, (str(tmp_path / "r"),)))
        drive.ahead("a1", pack_task(_mark, (str(tmp_path / "a1"), 1)))
        drive.ahead("a2", pack_task(_mark, (str(tmp_path / "a2"), 2)))
        await drive.wait_for(3)
        assert [(name, o.failure) for name, o in drive.outcomes] == [("r", SYSTEM)]
        assert drive.returned == ["a1", "a2"]
        assert not (tmp_path / "a1").exists() and not (tmp_path / "a2").exists()
        late: list[Ticket] = []
        executor.started = late.append
        waiting = drive.launch("w", pack_task(abs, (-5,)))  # the replacement may still be starting
        await drive.wait_for(4)
        assert drive.outcomes[-1] == ("w", Outcome(True, drive.outcomes[-1][1].payload))
        assert unpack_outcome(drive.outcomes[-1][1]) == 5
        assert late == ([waiting] if waiting.waited else [])  # told when a worker took it, if it waited

    trio.run(_with_executor, "process", body)


def test_a_task_stopped_past_its_timeout_gives_back_the_ones_queued_behind_it(tmp_path: Path) -> None:
    """stop() of a running task (its timeout) with 2 tasks handed ahead: it ends TIMED_OUT, its worker is
    killed and replaced, and the 2 come back unstarted (`returned`), never having run."""

    async def body(executor: ProcessExecutor) -> None:
        drive = _Driver(executor)
        running = drive.launch("r", pack_task(time.sleep, (30,)))
        drive.ahead("a1", pack_task(_mark, (str(tmp_path / "a1"), 1)))
        drive.ahead("a2", pack_task(_mark, (str(tmp_path / "a2"), 2)))
        await trio.sleep(0.3)
        assert executor.stop(running, TIMED_OUT, "past its time") is True
        await drive.wait_for(3)
        assert drive.outcomes == [("r", Outcome(False, b"", "past its time", TIMED_OUT))]
        assert drive.returned == ["a1", "a2"] and not list(tmp_path.iterdir())
        with trio.fail_after(20):
            assert unpack_outcome(await executor.run(pack_task(abs, (-6,)))) == 6
        assert executor.restarts == 1

    trio.run(_with_executor, "process", body)


def test_withdrawing_a_task_handed_ahead_after_it_started_kills_it_and_reports_nothing(tmp_path: Path) -> None:
    """Once a task handed ahead has started (the one before it ended), withdrawing it stops it as a forced
    cancel would: its worker is killed, no outcome comes for it, and the replacement runs the next task."""

    async def body(executor: ProcessExecutor) -> None:
        drive = _Driver(executor)
        drive.launch("r", pack_task(abs, (-1,)))
        slow = drive.ahead("slow", pack_task(_mark, (str(tmp_path / "slow"), 1, 30)))
        await drive.wait_for(1)
        with trio.fail_after(20):
            while not (tmp_path / "slow").exists():  # it started
                await trio.sleep(0.01)
        executor.withdraw(slow)
        with trio.fail_after(20):
            assert unpack_outcome(await executor.run(pack_task(abs, (-7,)))) == 7
        assert [name for name, _ in drive.outcomes] == ["r"] and executor.restarts == 1

    trio.run(_with_executor, "process", body)


def test_a_task_that_started_as_its_stopped_predecessor_answered_fails_once_when_the_kill_lands(
    tmp_path: Path, monkeypatch
) -> None:
    """The race of a timeout's kill with the running task's own end: the kill is held back (patched) until
    the task behind it has started. The stopped task ends with the stop's outcome, the one that started
    behind it fails once (SYSTEM: it may have run partly, so it is not given back to run again unseen), and
    nothing is given back."""
    real_kill = worker_pool._kill_group
    held: list = []

    async def body(executor: ProcessExecutor) -> None:
        drive = _Driver(executor)
        running = drive.launch("r", pack_task(_mark, (str(tmp_path / "r"), 0, 0.5)))
        drive.ahead("t", pack_task(_mark, (str(tmp_path / "t"), 1, 30)))
        await trio.sleep(0.1)
        monkeypatch.setattr(worker_pool, "_kill_group", held.append)
        assert executor.stop(running, TIMED_OUT, "past its time") is True
        with trio.fail_after(20):
            while not (tmp_path / "t").exists():  # r answered, so t started
                await trio.sleep(0.01)
        monkeypatch.setattr(worker_pool, "_kill_group", real_kill)
        real_kill(held[0])  # the kill lands
        await drive.wait_for(2)
        assert [(name, o.failure) for name, o in drive.outcomes] == [("r", TIMED_OUT), ("t", SYSTEM)]
        assert "killed as it started" in drive.outcomes[1][1].error and drive.returned == []

    trio.run(_with_executor, "process", body)


class _Idle:
    """A worker as _Pool's bookkeeping sees it: whose it is and the ticket it runs."""

    user = None
    ticket: Ticket | None = None


def test_a_task_handed_ahead_that_ends_before_it_is_adopted_gets_its_outcome_from_adopt() -> None:
    """A node monitor reports the outcomes of a worker's read once the read is handled (node_monitor._report): a task
    handed ahead may end in the same read as the one before it, before it was adopted. Its outcome waits on its
    ticket and `adopt` gives it at once; a withdrawn one's is dropped."""
    pool = ProcessExecutor(1)  # not started: only the tickets' bookkeeping is used
    got: list[tuple[str, Outcome]] = []
    worker = _Idle()
    first = worker.ticket = Ticket(b"", lambda o: got.append(("first", o)))
    ahead = Ticket(b"", None)
    ahead.tag = "ahead"
    pool._finished(worker, Outcome(True, b"1"), ahead)  # the first ended: the one handed ahead starts in its place
    assert first.successor is ahead and worker.ticket is ahead and got == [("first", Outcome(True, b"1"))]
    pool._finished(worker, Outcome(True, b"2"))  # it ended too, in the same read, before its caller adopted it
    assert len(got) == 1 and ahead.ended == Outcome(True, b"2")
    assert ProcessExecutor.adopt(ahead, lambda o: got.append(("ahead", o))) is ahead
    assert got[1] == ("ahead", Outcome(True, b"2")) and ahead.ended is None and ahead.done is None  # once
    gone = worker.ticket = Ticket(b"", None)
    gone.withdrawn = True
    pool._finished(worker, Outcome(True, b"3"))
    assert gone.ended is None and len(got) == 2  # given up: nobody waits for it
