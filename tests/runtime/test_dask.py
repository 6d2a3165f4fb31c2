"""sparrow_runtime.dask: Dask collections computed on a local Sparrow cluster give what Dask's
synchronous scheduler gives, exceptions reach dask.compute, and each wave of ready tasks is one job."""

import concurrent.futures
import io
import operator

import cloudpickle
import pytest

dask = pytest.importorskip("dask")

import dask.array as da
import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.diagnostics import ProgressBar

from sparrow_runtime import ConnectionLost, SparrowExecutor
from sparrow_runtime.dask import DaskScheduler
from sparrow_runtime.errors import RemoteTraceback

from .conftest import count_jobs


@pytest.fixture
def cluster(thread_cluster):
    return thread_cluster


@pytest.fixture
def sparrow(cluster):
    """A DaskScheduler whose `jobs` lists the size of each job it sent."""
    with DaskScheduler(cluster) as scheduler:
        scheduler.jobs = count_jobs(scheduler.executor.client)
        yield scheduler


def _inc(x):
    return x + 1


def _total(*xs):
    return sum(xs)


def test_a_delayed_graph_with_fan_out_and_fan_in_gives_what_the_synchronous_scheduler_gives(sparrow):
    inc, total = dask.delayed(_inc), dask.delayed(_total)
    root = inc(1)
    middle = [inc(root + i) for i in range(20)]
    out = total(*middle, *[inc(m) for m in middle[::3]])
    assert dask.compute(out, root, scheduler=sparrow) == dask.compute(out, root, scheduler="sync")


def test_a_bag_pipeline_gives_what_the_synchronous_scheduler_gives(sparrow):
    bag = db.from_sequence(range(1000), npartitions=8).map(lambda v: v * 3).filter(lambda v: v % 2).fold(operator.add)
    words = db.from_sequence(["a b", "b c", "c a b"] * 10, npartitions=4).str.split().flatten().frequencies()
    ours = dask.compute(bag, words, scheduler=sparrow)
    assert ours[0] == bag.compute(scheduler="sync")
    assert sorted(ours[1]) == sorted(words.compute(scheduler="sync"))


def test_an_array_reduction_on_chunked_random_data_matches_numpy(sparrow):
    x = da.random.RandomState(42).random_sample((2000, 2000), chunks=(500, 500))
    result = (x + x.T).mean(axis=0).compute(scheduler=sparrow)
    data = x.compute(scheduler="sync")
    np.testing.assert_allclose(result, (data + data.T).mean(axis=0))


def test_a_dataframe_groupby_aggregate_over_several_partitions_gives_what_the_synchronous_scheduler_gives(sparrow):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"key": rng.integers(0, 13, 5000), "value": rng.random(5000)})
    grouped = dd.from_pandas(frame, npartitions=5).groupby("key").value.agg(["sum", "mean", "count"])
    ours = grouped.compute(scheduler=sparrow).sort_index()
    pd.testing.assert_frame_equal(ours, grouped.compute(scheduler="sync").sort_index())
    pd.testing.assert_frame_equal(ours, frame.groupby("key").value.agg(["sum", "mean", "count"]), check_exact=False)


class Unlucky(Exception):
    pass


def _fail(x):
    raise Unlucky(f"no luck with {x}")


def test_an_exception_raised_in_a_graph_reaches_dask_compute_as_its_type_with_the_remote_traceback(sparrow):
    out = dask.delayed(_total)(dask.delayed(_inc)(1), dask.delayed(_fail)(7))
    with pytest.raises(Unlucky, match="no luck with 7") as caught:
        dask.compute(out, scheduler=sparrow)
    assert isinstance(caught.value.__cause__, RemoteTraceback) and "_fail" in caught.value.__cause__.tb
    assert dask.compute(dask.delayed(_inc)(1), scheduler=sparrow) == (2,)  # the scheduler serves the next graph


def test_tasks_that_become_ready_together_are_one_job(sparrow):
    root = dask.delayed(_inc)(0)
    leaves = [dask.delayed(_inc)(root, dask_key_name=f"leaf-{i}") for i in range(100)]
    total = dask.delayed(_total)(*leaves)
    assert dask.compute(total, scheduler=sparrow) == (200,)
    assert sparrow.jobs == [1, 100, 1]
    assert (sparrow.waves, sparrow.tasks) == (3, 102)


def test_a_stage_of_an_array_computation_is_one_job(sparrow):
    x = da.ones((400, 400), chunks=(100, 100))  # 16 chunks, made by one stage of 16 tasks
    assert float((x * 2).sum().compute(scheduler=sparrow, optimize_graph=False)) == 2 * 400 * 400
    assert sparrow.jobs[0] == 16  # every chunk of the first stage in one job


def test_num_workers_bounds_the_tasks_in_flight(sparrow):
    leaves = [dask.delayed(_inc)(i) for i in range(30)]
    assert dask.compute(dask.delayed(_total)(*leaves), scheduler=sparrow, num_workers=4) == (sum(range(1, 31)),)
    assert max(sparrow.jobs) <= 4


def test_a_dask_config_scheduler_and_dask_progress_bars_work(sparrow):
    out = io.StringIO()
    with dask.config.set(scheduler=sparrow), ProgressBar(out=out):
        assert dask.compute(dask.delayed(_inc)(41)) == (42,)
    assert "100%" in out.getvalue()


def test_an_executor_given_is_used_and_left_open(cluster):
    with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
        with DaskScheduler(ex) as scheduler:
            assert dask.compute(dask.delayed(_inc)(1), scheduler=scheduler) == (2,)
        assert ex.submit(_inc, 2).result(timeout=30) == 3
        with pytest.raises(TypeError, match="need a cluster, not an executor"):
            DaskScheduler(ex, user="alice")


def test_bad_arguments_are_refused(sparrow):
    with pytest.raises(ValueError, match="max_in_flight must be an int >= 1"):
        DaskScheduler(sparrow.executor, max_in_flight=0)
    with pytest.raises(ValueError, match="num_workers must be an int >= 1"):
        dask.compute(dask.delayed(_inc)(1), scheduler=sparrow, num_workers=-1)


def test_without_a_cluster_on_this_host_the_default_scheduler_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # where `sparrow local` records itself
    with pytest.raises(ConnectionLost, match="no scheduler given"):
        DaskScheduler()


class _Recorder:
    """Stands for a DaskScheduler: records the calls each wave sends; their futures stay pending."""

    def __init__(self):
        self.sent = []
        self.executor = self

    def submit_many(self, calls):
        self.sent.append(len(calls))
        return [concurrent.futures.Future() for _ in calls]

    def _count(self, tasks):
        pass


def test_without_dask_callbacks_each_submission_still_goes_out():
    from sparrow_runtime.dask import _Wave

    recorder = _Recorder()
    wave = _Wave(recorder, in_flight=100, options={})
    wave.submit(_inc, [])  # no pretask announced it
    assert recorder.sent == [1]
    wave._deliver([(concurrent.futures.Future(), None, _done(1))])  # an outcome handed over, never followed by posttask
    wave.submit(_inc, [])
    assert recorder.sent == [1, 1]


def _done(value):
    future = concurrent.futures.Future()
    future.set_result(value)
    return future


def test_an_array_graphs_chunks_stay_at_the_node_monitors_and_only_final_results_reach_the_client(sparrow):
    """(x + x.T) of 2 MB chunks: every intermediate chunk stays where it was made (dependents take
    references), the small reduction comes back inline, and the full array, put together on the cluster by
    Dask's finalize task, is fetched once."""
    x = da.random.random((2000, 2000), chunks=(500, 500))
    links = sparrow.executor.client._links
    mean = dask.compute((x + x.T).mean(axis=0), scheduler=sparrow)[0]
    assert links.fetched == 0
    np.testing.assert_allclose(mean, (x + x.T).mean(axis=0).compute(scheduler="sync"))
    full = dask.compute(x + x.T, scheduler=sparrow)[0]
    assert links.fetched == 1 and links.bytes_fetched > 32_000_000 and full.shape == (2000, 2000)
    np.testing.assert_allclose(full, full.T)


def _frame(rows: int = 80_000) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"key": rng.integers(0, 20, rows), "value": rng.random(rows)})


def test_a_from_pandas_graphs_partitions_are_scattered_and_never_pass_through_the_scheduler(sparrow):
    """dd.from_pandas embeds 4 partitions of ~320 kB in the graph: each is uploaded once, straight to a node
    monitor (scattered: the client's bytes_uploaded), the tasks that take them go with references, and the
    job payloads the client sends stay small; the result is the synchronous scheduler's."""
    frame = _frame()
    grouped = dd.from_pandas(frame, npartitions=4).groupby("key").value.sum()
    traffic = dict(sparrow.executor.client.traffic)
    got = dask.compute(grouped, scheduler=sparrow)[0]
    pd.testing.assert_series_equal(got.sort_index(), grouped.compute(scheduler="sync").sort_index())
    after = sparrow.executor.client.traffic
    assert sparrow.scattered == 4
    assert after["bytes_uploaded"] - traffic["bytes_uploaded"] > frame.memory_usage().sum()
    assert after["bytes_sent"] - traffic["bytes_sent"] < 100_000  # the tasks, not the data


def test_a_scattered_partition_is_pickled_once(sparrow, monkeypatch):
    """Sizing a graph's data pickles it; scattering it then uploads that pickle instead of pickling it again:
    each of the 4 partitions of from_pandas is pickled with its data (in band: not only the buffers' outline
    that data/packed.py takes first) exactly once, and the result is still the right one."""
    frame = _frame()
    grouped = dd.from_pandas(frame, npartitions=4).groupby("key").value.sum()
    pickled: list[int] = []
    dumps = cloudpickle.dumps

    def counting(value, *args, **kwargs):
        if isinstance(value, pd.DataFrame) and kwargs.get("buffer_callback") is None:
            pickled.append(id(value))
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(cloudpickle, "dumps", counting)
    got = dask.compute(grouped, scheduler=sparrow)[0]
    pd.testing.assert_series_equal(got.sort_index(), grouped.compute(scheduler="sync").sort_index())
    assert sparrow.scattered == 4 and len(pickled) == 4 and len(set(pickled)) == 4


def test_graph_data_under_scatter_over_or_with_scatter_off_travels_with_its_tasks(cluster):
    """scatter_over=None: nothing is scattered and the partitions go with their tasks; bad values refused."""
    frame = _frame()
    grouped = dd.from_pandas(frame, npartitions=4).groupby("key").value.sum()
    with DaskScheduler(cluster, scatter_over=None) as sparrow:
        traffic = dict(sparrow.executor.client.traffic)
        got = dask.compute(grouped, scheduler=sparrow)[0]
        pd.testing.assert_series_equal(got.sort_index(), grouped.compute(scheduler="sync").sort_index())
        assert sparrow.scattered == 0
        assert sparrow.executor.client.traffic["bytes_sent"] - traffic["bytes_sent"] > frame.memory_usage().sum()
    with pytest.raises(ValueError, match="scatter_over must be an int of bytes or None, got 'big'"):
        DaskScheduler(cluster, scatter_over="big")


def test_a_tls_local_cluster_is_entered_with_its_client_credentials():
    """DaskScheduler(LocalCluster(tls=True)) connects with the cluster's TLS client (its `credentials`),
    not its shared secret, which a TLS cluster does not take."""
    from sparrow_runtime import LocalCluster, NodeMonitorConfig

    with (
        LocalCluster(
            node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=1, slots=1, dashboard=False, tls=True
        ) as cluster,
        DaskScheduler(cluster) as sparrow,
    ):
        assert dask.compute(dask.delayed(_inc)(1), scheduler=sparrow) == (2,)


# -- annotations ------------------------------------------------------------------------------------------------


@pytest.fixture
def submitted(sparrow):
    """The SubmitJob messages the scheduler's client sends, in a list that grows as it sends."""
    from sparrow_runtime.wire.messages import SubmitJob

    client = sparrow.executor.client
    msgs, send = [], client._send

    def recorded(batch):
        msgs.extend(m for m in batch if type(m) is SubmitJob)
        return send(batch)

    client._send = recorded
    return msgs


def _fail_the_first_time(marker):
    if not marker.exists():
        marker.touch()
        raise Unlucky("first try")
    return "second try"


def test_a_retries_annotation_runs_a_failed_task_again_and_others_are_not_retried(sparrow, tmp_path):
    with dask.annotate(retries=1):
        retried = dask.delayed(_fail_the_first_time)(tmp_path / "retried")
    assert dask.compute(retried, scheduler=sparrow) == ("second try",)
    with pytest.raises(Unlucky, match="first try"):
        dask.compute(dask.delayed(_fail_the_first_time)(tmp_path / "plain"), scheduler=sparrow)


def test_a_priority_annotation_is_the_jobs_priority_higher_first_as_in_dask(sparrow, submitted):
    with dask.annotate(priority=5):
        urgent = dask.delayed(_inc)(1, dask_key_name="urgent")
    plain = dask.delayed(_inc)(2, dask_key_name="plain")
    assert dask.compute(urgent, plain, scheduler=sparrow) == (2, 3)
    assert sorted(m.priority for m in submitted) == [-5, 0]  # one job each: Sparrow runs lower first


def _pid(_):
    import os

    return os.getpid()


def test_a_workers_annotation_runs_the_tasks_on_those_node_monitors_only(cluster, sparrow, submitted):
    chosen = cluster.node_ids[1]
    with dask.annotate(workers=[chosen]):
        pids = [dask.delayed(_pid)(i) for i in range(8)]
    assert set(dask.compute(*pids, scheduler=sparrow)) == {cluster.node_monitor_pids[1]}
    assert {m.constraint.node_monitors for m in submitted} == {(chosen,)}


def test_workers_with_allow_other_workers_is_a_preference(cluster, sparrow, submitted):
    with dask.annotate(workers=cluster.node_ids[0], allow_other_workers=True):
        out = dask.delayed(_inc)(1)
    assert dask.compute(out, scheduler=sparrow) == (2,)
    assert [(m.constraint, m.task_prefer) for m in submitted] == [(None, [(cluster.node_ids[0],)])]


def test_a_resources_annotation_is_the_tasks_request(sparrow, submitted):
    """Dask's names are lower-cased; the task runs where its request fits (the node monitors' detected
    CPUs); one nothing can hold fails naming the largest capacity seen; a bad amount is named."""
    with dask.annotate(resources={"CPUS": 0.5, "memory": "1MiB"}):
        small = dask.delayed(_inc)(1)
    assert dask.compute(small, scheduler=sparrow) == (2,)
    assert [m.resources for m in submitted] == [{"cpus": 500, "memory": 2**20}]
    with dask.annotate(resources={"GPU": 64}):
        gpu = dask.delayed(_inc)(1)
    with pytest.raises(Exception, match="no live node monitor has the resources gpu=64"):
        dask.compute(gpu, scheduler=sparrow)
    with dask.annotate(resources={"GPU": -1}):
        bad = dask.delayed(_inc)(1)
    with pytest.raises(ValueError, match=r"resources=.* of .*: gpu=-1: the amount must be >= 0"):
        dask.compute(bad, scheduler=sparrow)


def test_unknown_annotations_are_ignored_and_bad_values_named(sparrow, caplog):
    with dask.annotate(color="blue"), caplog.at_level("DEBUG", logger="sparrow_runtime.dask_annotations"):
        blue = dask.delayed(_inc)(1)
        assert dask.compute(blue, scheduler=sparrow) == (2,)
    assert "ignored (not for Sparrow): color" in caplog.text
    with dask.annotate(retries=-1):
        bad = dask.delayed(_inc)(1)
    with pytest.raises(ValueError, match=r"retries=-1 of .*: must be an int >= 0"):
        dask.compute(bad, scheduler=sparrow)
