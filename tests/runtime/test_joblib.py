"""sparrow_runtime.joblib: joblib's Parallel and scikit-learn's n_jobs on a local cluster give what joblib's own
backends give, each batch is one job, large arguments are scattered once, errors reach the caller and abort
the rest, and a Parallel inside a task runs in its worker."""

import gc
import time

import numpy as np
import pytest

pytest.importorskip("joblib")

from joblib import Parallel, delayed, parallel_config

from sparrow_runtime import SparrowExecutor
from sparrow_runtime.errors import RemoteTraceback
from sparrow_runtime.joblib import SparrowBackend

from .conftest import count_jobs


@pytest.fixture(scope="module")
def executor(thread_cluster):
    """One executor for the module's Parallel calls (2 node monitors x 1 slot); `jobs` lists the size of each
    job it sent."""
    with SparrowExecutor(thread_cluster.schedulers, **thread_cluster.credentials) as ex:
        ex.jobs = count_jobs(ex.client)
        yield ex


@pytest.fixture
def backend(executor):
    """The backend's instance a `parallel_config(backend="sparrow")` block makes; `jobs`: the sizes of the
    jobs sent since it was made."""
    with parallel_config(backend="sparrow", cluster=executor) as config:
        backend = config["backend"]
        start = len(executor.jobs)
        type(backend).jobs = property(lambda _: executor.jobs[start:])
        yield backend


def _square(i):
    return i * i


def test_a_parallel_call_gives_the_sequential_results_in_order(backend):
    assert Parallel(n_jobs=-1)(delayed(_square)(i) for i in range(2000)) == [i * i for i in range(2000)]
    assert list(Parallel(n_jobs=2, return_as="generator")(delayed(_square)(i) for i in range(50))) == [
        i * i for i in range(50)
    ]


def test_each_batch_is_one_job_of_at_most_n_jobs_tasks(backend):
    """batch_size=10 with n_jobs=2: each batch joblib sends is one job, of 2 tasks for a batch of 2 calls or
    more (joblib splits the last calls of an exhausted iterator into batches of 1)."""
    assert Parallel(n_jobs=2, batch_size=10)(delayed(_square)(i) for i in range(55)) == [i * i for i in range(55)]
    assert len(backend.jobs) == backend.batches and sum(backend.jobs) == backend.tasks
    assert set(backend.jobs) == {1, 2} and backend.jobs[0] == 2


def test_n_jobs_minus_one_is_every_slot_of_the_cluster(backend):
    assert backend.effective_n_jobs(-1) == 2  # 2 node monitors x 1 slot
    assert backend.effective_n_jobs(-2) == 1
    assert backend.effective_n_jobs(-9) == 1
    assert backend.effective_n_jobs(7) == 7
    with pytest.raises(ValueError, match="n_jobs must be a non-zero int, got 0"):
        backend.effective_n_jobs(0)


class Unlucky(Exception):
    pass


def _fail_on(i, bad):
    if i == bad:
        raise Unlucky(f"no luck with {i}")
    return i


def test_a_calls_exception_reaches_parallel_as_its_type_with_the_remote_traceback(backend):
    with pytest.raises(Unlucky, match="no luck with 7") as caught:
        Parallel(n_jobs=2)(delayed(_fail_on)(i, 7) for i in range(20))
    assert isinstance(caught.value.__cause__, RemoteTraceback) and "_fail_on" in caught.value.__cause__.tb
    assert Parallel(n_jobs=2)(delayed(_square)(i) for i in range(3)) == [0, 1, 4]  # the backend goes on


def test_a_batch_that_cannot_be_sent_ends_the_call_with_its_error(backend):
    """A call whose argument does not pickle, in a batch joblib dispatches from an earlier batch's callback
    (batch_size=1, past the first 2 * n_jobs): Parallel raises its TypeError at once, not at its timeout."""
    import threading

    args = [1] * 12 + [threading.Lock()] + [1] * 3
    start = time.monotonic()
    with pytest.raises(TypeError, match=r"cannot pickle '_thread\.lock' object"):
        Parallel(n_jobs=2, batch_size=1, timeout=60)(delayed(_square)(a) for a in args)
    assert time.monotonic() - start < 30
    assert Parallel(n_jobs=2)(delayed(_square)(i) for i in range(3)) == [0, 1, 4]


def _sleep_then_mark(i, folder):
    if i == 0:
        raise Unlucky("first")
    time.sleep(0.2)
    (folder / str(i)).touch()
    return i


def test_after_a_failure_the_batches_still_queued_on_the_cluster_are_cancelled(backend, tmp_path):
    """All 12 batches are sent at once (pre_dispatch="all") to 2 slots; the first fails at once and joblib
    aborts: the batches still queued are cancelled, so far fewer than the other 11 ever run."""
    with pytest.raises(Unlucky):
        Parallel(n_jobs=2, batch_size=1, pre_dispatch="all")(delayed(_sleep_then_mark)(i, tmp_path) for i in range(12))
    time.sleep(11 * 0.2 / 2 + 0.5)  # what the rest would take on 2 slots, had they not been cancelled
    assert len(list(tmp_path.iterdir())) <= 4


def _inner_sum(n):
    with parallel_config(n_jobs=2):  # a nested Parallel: joblib's nested backend, in this worker
        return sum(Parallel()(delayed(_square)(i) for i in range(n)))


def test_a_parallel_inside_a_task_runs_in_its_worker(backend):
    jobs_before = len(backend.jobs)
    assert Parallel(n_jobs=2)(delayed(_inner_sum)(n) for n in (10, 20, 30)) == [
        sum(i * i for i in range(n)) for n in (10, 20, 30)
    ]
    assert backend.batches == len(backend.jobs) - jobs_before  # nothing but the outer batches reached the cluster


def _pick(x, i):
    return float(x[i])


def test_a_large_argument_is_scattered_once_and_tasks_carry_its_reference(backend, executor):
    """A 800 kB array given to 40 calls is uploaded once (bytes_uploaded), the tasks stay small (bytes_sent),
    and each call reads it; a small one travels with its tasks."""
    x = np.arange(100_000, dtype=np.float64)
    traffic = dict(executor.client.traffic)
    assert Parallel(n_jobs=2)(delayed(_pick)(x, i) for i in range(40)) == [float(i) for i in range(40)]
    after = executor.client.traffic
    assert backend.scattered == 1
    assert len(backend.jobs) == backend.batches  # each batch still one job
    assert after["bytes_uploaded"] - traffic["bytes_uploaded"] >= x.nbytes
    assert after["bytes_sent"] - traffic["bytes_sent"] < x.nbytes
    small = np.arange(10.0)
    assert Parallel(n_jobs=2)(delayed(_pick)(small, i) for i in range(10)) == [float(i) for i in range(10)]
    assert backend.scattered == 1


def test_schedulers_and_credentials_name_the_cluster_as_for_sparrow_executor(thread_cluster):
    with parallel_config(backend="sparrow", schedulers=thread_cluster.schedulers, secret=thread_cluster.secret):
        assert Parallel(n_jobs=-1)(delayed(_square)(i) for i in range(5)) == [0, 1, 4, 9, 16]
    with pytest.raises(TypeError, match="not both"):
        SparrowBackend(thread_cluster, schedulers=thread_cluster.schedulers)


def test_bad_arguments_are_refused(executor):
    with pytest.raises(ValueError, match="scatter_over must be an int of bytes or None, got 'big'"):
        SparrowBackend(executor, scatter_over="big")
    with pytest.raises(TypeError, match="need a cluster, not an executor"):
        SparrowBackend(executor, user="alice")


@pytest.mark.slow
def test_a_grid_search_gives_the_results_of_n_jobs_1_and_of_loky(backend):
    """GridSearchCV on scikit-learn's bundled digits: the same best_params_ and the same scores in
    cv_results_ on the cluster (n_jobs=-1) as in the caller's process (n_jobs=1) and on loky (n_jobs=2)."""
    datasets = pytest.importorskip("sklearn.datasets")
    from sklearn.model_selection import GridSearchCV
    from sklearn.tree import DecisionTreeClassifier

    X, y = datasets.load_digits(return_X_y=True)
    grid = {"max_depth": [2, 4, 8], "min_samples_leaf": [1, 5]}
    tree = DecisionTreeClassifier(random_state=0)
    with parallel_config(backend="sequential"):
        alone = GridSearchCV(tree, grid, cv=3, n_jobs=1).fit(X, y)
    with parallel_config(backend="loky"):
        loky = GridSearchCV(tree, grid, cv=3, n_jobs=2).fit(X, y)
    ours = GridSearchCV(tree, grid, cv=3, n_jobs=-1).fit(X, y)
    for other in (alone, loky):
        assert ours.best_params_ == other.best_params_
        for key in ("mean_test_score", "std_test_score", "rank_test_score", "split0_test_score", "split2_test_score"):
            np.testing.assert_array_equal(ours.cv_results_[key], other.cv_results_[key])
    assert backend.scattered >= 1  # the digits (X: 1797 x 64 floats, 920 kB) left the client once per call


def test_without_a_cluster_the_backend_runs_on_the_sparrow_local_of_this_host(thread_cluster, tmp_path, monkeypatch):
    """parallel_config(backend="sparrow") alone finds the `sparrow local` recorded on this host, as
    SparrowExecutor() does, with its credentials; the executor it made is shut down with the backend."""
    from sparrow_runtime.client.local_state import write_state

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    write_state(thread_cluster.schedulers, [], thread_cluster.secret)
    with parallel_config(backend="sparrow") as config:
        assert Parallel(n_jobs=-1)(delayed(_square)(i) for i in range(10)) == [i * i for i in range(10)]
        executor = config["backend"].executor
    del config
    gc.collect()
    executor._loop.thread.join(timeout=10)
    assert not executor._loop.thread.is_alive()
