"""Tasks that take other tasks' results: the sans-I/O tracker (dependencies.py), finding inputs in
arguments (task_inputs.py), and futures / job[i] refs as inputs on a real local cluster."""

import concurrent.futures
import pickle
import threading
import time
from collections import namedtuple
from functools import partial

import cloudpickle
import pytest
import trio
import trio.lowlevel

from sparrow_runtime import (
    Client,
    DependencyFailed,
    LinkConfig,
    NodeMonitorConfig,
    SchedulerConfig,
    SparrowExecutor,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.client.dependencies import Dependencies, Settler, dependency_failed
from sparrow_runtime.client.job import oversize_problem, split_jobs
from sparrow_runtime.client.task_inputs import find_inputs, pack_template
from sparrow_runtime.client.tick_batch import TickBatch
from sparrow_runtime.data.dependent import Slot, call_with_inputs, fill
from sparrow_runtime.errors import RemoteTraceback, TaskCancelled
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic
from sparrow_runtime.wire.limits import MAX_TASKS_PER_JOB

from ..conftest import count_jobs

SECRET = "test-secret"


class Key:
    """An input name for the tracker tests (hashable by identity, like a future)."""


def _inputs(*keys):
    return find_inputs(keys, {}, lambda obj: isinstance(obj, Key))


# -- finding inputs -------------------------------------------------------------------------------


def test_inputs_are_found_nested_in_lists_tuples_sets_and_dict_values_and_put_back_by_fill():
    a, b = Key(), Key()
    found = find_inputs((a, [1, (b, {"k": a})]), {"x": {b}}, lambda obj: isinstance(obj, Key))
    assert found.keys == [a, b]
    assert found.paths == ["args[0]", "args[1][1][0]"]
    assert found.args == (Slot(0), [1, (Slot(1), {"k": Slot(0)})]) and found.kwargs == {"x": {Slot(1)}}
    assert fill((found.args, found.kwargs), ["A", "B"]) == (("A", [1, ("B", {"k": "A"})]), {"x": {"B"}})


def test_no_inputs_gives_none_and_other_containers_are_left_alone():
    pair = namedtuple("pair", "left right")
    a = Key()
    assert find_inputs((1, [2], {"k": 3}), {"x": 4}, lambda obj: isinstance(obj, Key)) is None
    assert find_inputs((pair(a, 1),), {}, lambda obj: isinstance(obj, Key)) is None  # as Dask: a namedtuple is a value


def test_a_dependent_call_unpickles_its_inputs_and_calls_with_their_values():
    found = _inputs(Key(), Key())
    template = pack_template(lambda x, y: x - y, found)
    assert call_with_inputs(template, [pickle.dumps(10), pickle.dumps(3)]) == 7
    assert isinstance(cloudpickle.loads(template)[1][0], Slot)


# -- the tracker ----------------------------------------------------------------------------------


def test_a_task_is_ready_once_every_input_is_done_with_the_values_in_slot_order():
    a, b = Key(), Key()
    deps = Dependencies()
    deps.wait("t", b"call", _inputs(a, b))
    assert deps.awaited(a) and deps.awaited(b) and len(deps) == 1
    assert deps.done(b, b"B") == []
    [ready] = deps.done(a, b"A")
    assert (ready.target, ready.values) == ("t", [b"A", b"B"])
    assert len(deps) == 0 and not deps.awaited(a)


def test_an_input_given_twice_is_waited_for_once():
    a = Key()
    deps = Dependencies()
    deps.wait("t", b"call", find_inputs((a, [a]), {"k": a}, lambda obj: isinstance(obj, Key)))
    assert [w.target for w in deps.done(a, b"A")] == ["t"]


def test_equal_inputs_are_one_input():
    found = find_inputs(((1, 2), [(1, 2)]), {}, lambda obj: obj == (1, 2))  # two objects, equal: as job[0], job[0]
    assert found.keys == [(1, 2)] and found.args == (Slot(0), [Slot(0)])


def test_a_failed_input_ends_its_waiting_tasks_with_where_it_was_and_their_other_inputs_no_longer_count():
    a, b = Key(), Key()
    deps = Dependencies()
    deps.wait("t1", b"", find_inputs((1,), {"x": [a, b]}, lambda obj: isinstance(obj, Key)))
    deps.wait("t2", b"", _inputs(b))
    assert [(w.target, path) for w, path in deps.failed(b)] == [("t1", "kwargs['x'][1]"), ("t2", "args[0]")]
    assert deps.done(a, b"A") == [] and len(deps) == 0


def test_a_dropped_task_is_never_ready():
    a = Key()
    deps = Dependencies()
    deps.wait("t", b"", _inputs(a))
    assert deps.drop("t") and not deps.drop("t")
    assert deps.done(a, b"A") == []


def test_a_dependency_failure_names_the_first_failure_upstream_and_chains_the_cause():
    root = ValueError("bad row 7")
    first = dependency_failed("args[0]", root)
    second = dependency_failed("kwargs['y']", first)
    assert str(first) == "input args[0] failed: ValueError: bad row 7"
    assert str(second) == "input kwargs['y'] failed: ValueError: bad row 7"
    assert second.__cause__ is first and first.__cause__ is root
    assert pickle.loads(pickle.dumps(second)).path == "kwargs['y']"


def test_jobs_are_split_by_frame_size_and_task_count_and_an_oversized_task_is_named():
    assert split_jobs([100] * 10, 10_000) == [range(10)]
    groups = split_jobs([3000] * 10, 10_000)  # 1 KiB per job and 16 B per task besides the payloads
    assert [len(g) for g in groups] == [2, 2, 2, 2, 2] and groups[-1].stop == 10
    assert [len(g) for g in split_jobs([1] * (MAX_TASKS_PER_JOB + 1), 2**31)] == [MAX_TASKS_PER_JOB, 1]
    assert oversize_problem(8000, 10_000) is None
    assert "over the frame limit of 10,000 bytes" in oversize_problem(9000, 10_000)


def test_settling_a_chain_of_outcomes_runs_them_one_after_another_not_nested():
    order = []

    def settle(n):
        order.append(n)
        if n < 5000:  # each outcome ends the next task: nested calls would pass the recursion limit
            settler(n + 1)

    settler = Settler(settle)
    settler(0)
    assert order == list(range(5001))


def test_what_is_added_in_one_pass_of_the_trio_loop_is_flushed_once_and_a_later_pass_is_another_batch():
    batches = []

    async def main():
        batch = TickBatch(batches.append)
        for i in range(100):
            batch.add(i)
        assert batches == []  # not before the pass ends
        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()
        batch.add("later")
        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()

    trio.run(main)
    assert batches == [list(range(100)), ["later"]]


# -- SparrowExecutor: futures as arguments, on a real cluster ---------------------------------------


def _add(*xs):
    return sum(xs)


def _combine(x, nested, key):
    return (x, nested, key)


def _boom(x):
    raise ValueError(f"bad row {x}")


def _touch(path, *inputs):
    open(path, "w").close()


def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def _blob(n):
    return b"x" * n


def _joined(*blobs):
    return b"".join(blobs)


@pytest.fixture
def cluster(thread_cluster):
    return thread_cluster


@pytest.fixture
def executor(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        ex.jobs = count_jobs(ex.client)  # the size of each job the executor sends
        yield ex


def test_futures_nested_in_arguments_are_replaced_by_their_values(executor):
    a, b = executor.submit(_add, 1, 2), executor.submit(_add, 10)
    c = executor.submit(_combine, a, [b, (a,)], key={"k": b})
    assert c.result(timeout=30) == (3, [10, (3,)], {"k": 10})


def test_submits_made_while_the_client_is_busy_go_out_as_one_job(executor):
    """The submits that reach the trio thread together (here: while it is held busy) are
    one job, batch-sampled together, each future with its own value."""
    assert executor.submit(_add, 0).result(timeout=30) == 0
    released = threading.Event()
    executor._loop.token.run_sync_soon(released.wait, 30)  # the trio thread is busy until all 100 are submitted
    futures = [executor.submit(_add, i, 1) for i in range(100)]
    released.set()
    assert [f.result(timeout=30) for f in futures] == [i + 1 for i in range(100)]
    assert executor.jobs == [1, 100]


def test_the_dependents_of_one_task_go_out_as_one_job(executor):
    root = executor.submit(_sleep, 1)  # running until all its dependents are submitted
    dependents = [executor.submit(_add, root, i) for i in range(100)]
    total = executor.submit(_add, *dependents)
    assert total.result(timeout=30) == 100 + sum(range(100))
    assert executor.jobs == [1, 100, 1]


def test_submit_many_with_inputs_done_already_sends_one_job_and_waits_for_those_that_are_not(executor):
    """submit_many's calls that take futures: with their inputs done, the calls are one job with the plain
    ones; a call whose input is still running waits for it and is sent when it is done."""
    done = executor.submit(_add, 5)
    assert done.result(timeout=30) == 5
    sent = len(executor.jobs)
    futures = executor.submit_many([(_add, (done, i), {}) for i in range(10)] + [(_add, (7,), {})])
    assert [f.result(timeout=30) for f in futures] == [5 + i for i in range(10)] + [7]
    assert executor.jobs[sent:] == [11]
    running = executor.submit(_sleep, 0.5)
    later = executor.submit_many([(_add, (running, 1), {}), (_add, (2,), {})])
    assert [f.result(timeout=30) for f in later] == [1.5, 2]
    assert executor.jobs[sent + 1 :] == [1, 1, 1]  # the sleep; the plain call; the dependent once its input is done


def test_a_deep_chain_of_dependent_tasks_runs_to_the_end(executor):
    future = executor.submit(_add, 0)
    for _ in range(300):
        future = executor.submit(_add, future, 1)
    assert future.result(timeout=60) == 300


def test_an_input_done_before_the_submission_is_used_as_its_value(executor):
    a = executor.submit(_add, 5)
    assert a.result(timeout=30) == 5
    assert executor.submit(_add, a, a).result(timeout=30) == 10


def test_a_failed_input_fails_its_dependents_without_running_them_naming_the_failure(executor, tmp_path):
    bad = executor.submit(_boom, 7)
    first = executor.submit(_touch, str(tmp_path / "first"), 1, [bad])
    second = executor.submit(_touch, str(tmp_path / "second"), first)
    with pytest.raises(DependencyFailed, match=r"input args\[2\]\[0\] failed: ValueError: bad row 7") as caught:
        first.result(timeout=30)
    upstream = caught.value.__cause__
    assert isinstance(upstream, ValueError) and isinstance(upstream.__cause__, RemoteTraceback)
    with pytest.raises(DependencyFailed, match=r"input args\[1\] failed: ValueError: bad row 7"):
        second.result(timeout=30)
    assert not (tmp_path / "first").exists() and not (tmp_path / "second").exists()
    assert executor.jobs == [1]  # neither dependent was sent
    late = executor.submit(_touch, str(tmp_path / "late"), bad)  # an input that had already failed
    with pytest.raises(DependencyFailed):
        late.result(timeout=30)


def test_cancelling_an_upstream_task_cancels_its_dependents_and_theirs(executor, tmp_path):
    slow = executor.submit(_sleep, 30)
    child = executor.submit(_touch, str(tmp_path / "child"), slow)
    grandchild = executor.submit(_touch, str(tmp_path / "grandchild"), child)
    time.sleep(0.2)  # the slow task is running: only a forced cancel stops it
    assert slow.cancel(force=True)
    done, _ = concurrent.futures.wait([child, grandchild], timeout=10)
    assert child.cancelled() and grandchild.cancelled() and len(done) == 2
    assert not (tmp_path / "child").exists()


def test_cancelling_a_waiting_task_leaves_its_input_running_and_it_is_never_sent(executor, tmp_path):
    slow = executor.submit(_sleep, 0.5)
    child = executor.submit(_touch, str(tmp_path / "child"), slow)
    assert child.cancel()
    assert slow.result(timeout=30) == 0.5
    time.sleep(0.2)
    assert executor.jobs == [1] and not (tmp_path / "child").exists()


def test_a_future_of_another_executor_is_refused(executor, cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as other:
        theirs = other.submit(_add, 1)
        with pytest.raises(ValueError, match="future of another executor"):
            executor.submit(_add, theirs)
        theirs.result(timeout=30)


def test_a_future_inside_another_object_is_refused_with_a_clear_error(executor):
    a = executor.submit(_add, 1)
    with pytest.raises(TypeError, match=r"a future is an input only as an argument of SparrowExecutor\.submit"):
        executor.submit(_add, namedtuple("box", "value")(a))
    a.result(timeout=30)


def test_inputs_over_the_frame_limit_are_refused_before_anything_is_sent(cluster):
    """Inputs that travel with their task (under the inline limit) and its own arguments must fit one frame:
    refused at submit when known, else the dependent fails once its inputs are done, and is not sent."""
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, max_frame=1 << 20) as ex:
        done = ex.submit(_blob, 60_000)
        done.result(timeout=30)
        with pytest.raises(ValueError, match="over the frame limit of 1,048,576 bytes: its arguments and the inputs"):
            ex.submit(_add, done, done, b"y" * 1_000_000)  # at submission: the input's value is known
        late = [ex.submit(_blob, 60_000) for _ in range(20)]
        many = ex.submit(_combine, late, None, None)  # 20 inline inputs of 60 kB, known only once all are done
        with pytest.raises(ValueError, match="over the frame limit"):
            many.result(timeout=30)
        assert len(late[0].result()) == 60_000


def test_inputs_over_the_inline_limit_travel_as_references_whatever_the_frame_limit(cluster):
    """Results over the node monitors' inline limit stay there: a dependent of two 700 kB results runs on a
    client whose frame limit is 1 MiB, and each result is still fetched whole by result()."""
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret, max_frame=1 << 20) as ex:
        a, b = ex.submit(_blob, 700_000), ex.submit(_blob, 700_000)
        both = ex.submit(_joined, a, b)
        assert both.result(timeout=30) == b"x" * 1_400_000
        assert a.kept and len(a.result()) == 700_000 and not a.kept


# -- Client: job[i] as an input of another job's task ---------------------------------------------


async def _with_services(test):
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret=SECRET)), logic=SchedulerLogic(seed=3))
        )
        for i in range(2):
            await nursery.start(
                partial(
                    serve_node_monitor,
                    NodeMonitorConfig(
                        link=LinkConfig(secret=SECRET), schedulers=[address], node_id=f"nm{i}", executor="thread"
                    ),
                    logic=NodeMonitorLogic(NodeMonitorConfig(slots=1)),
                )
            )
        async with Client([address], secret=SECRET) as client:
            await test(client)
        nursery.cancel_scope.cancel()


def test_a_job_task_takes_another_jobs_task_outcome_and_the_ready_ones_are_placed_together():
    async def test(client):
        placed = count_jobs(client)
        first = await client.submit_job([partial(_add, i) for i in range(4)])
        second = await client.submit_job(
            [
                partial(_add, first[0], 100),
                partial(_combine, first[1], [first[2]], key={"k": first[3]}),
                partial(_add, 5),
            ]
        )
        assert await second.results() == [100, (1, [2], {"k": 3}), 5]
        assert placed[:2] == [4, 1]  # the first job; the task of the second that needs no input
        assert sum(placed[2:]) == 2

    trio.run(_with_services, test)


def test_a_job_task_whose_input_failed_or_was_cancelled_ends_without_running():
    async def test(client):
        bad = await client.submit_job([partial(_boom, 3), partial(_sleep, 30)])
        dependent = await client.submit_job([partial(_add, bad[0]), partial(_add, bad[1])])
        bad.cancel_tasks([1])
        first, second = await dependent.outcomes()
        assert isinstance(first.exception, DependencyFailed) and "ValueError: bad row 3" in str(first.exception)
        assert "bad row 3" in str(first.exception.__cause__)  # the upstream's remote traceback
        assert isinstance(second.exception, TaskCancelled)
        assert dependent.attempts == [0, 0]  # neither was placed

    trio.run(_with_services, test)


def test_a_task_ref_out_of_range_or_of_another_client_is_refused():
    async def test(client):
        job = await client.submit_job([partial(_add, 1)])
        with pytest.raises(IndexError):
            job[1]
        other = Client(client.schedulers, secret=SECRET)
        with pytest.raises(ValueError, match="another client"):
            await other.submit_job([partial(_add, job[0])])
        await job.wait()

    trio.run(_with_services, test)
