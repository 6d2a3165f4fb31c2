"""Dask's own tests of a scheduler's `get` function (dask.utils_test.GetFunctionTestMixin, the suite Dask
runs against its synchronous, threaded and multiprocessing schedulers) run against DaskScheduler on a local
cluster and against sparrow_runtime.dask.get on the `sparrow local` of this host."""

import pytest

pytest.importorskip("dask")

from dask.utils_test import GetFunctionTestMixin

from sparrow_runtime import dask as sparrow_dask
from sparrow_runtime.client.local_state import write_state


@pytest.fixture(scope="module")
def scheduler(thread_cluster):
    with sparrow_dask.DaskScheduler(thread_cluster) as scheduler:
        yield scheduler


@pytest.fixture(scope="module")
def local_get(thread_cluster, tmp_path_factory):
    """sparrow_runtime.dask.get, finding the thread cluster as the `sparrow local` of this host."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
        patch.setattr(sparrow_dask, "_local", None)
        write_state(thread_cluster.schedulers, [], thread_cluster.secret)
        yield sparrow_dask.get
        if sparrow_dask._local is not None:
            sparrow_dask._local.close()


class _DaskMixin(GetFunctionTestMixin):
    """Dask's mixin, its chain of 10,000 tasks marked slow (each a job of its own: about 10 s here)."""

    @pytest.mark.slow
    def test_get_stack_limit(self):
        super().test_get_stack_limit()


class TestDaskScheduler(_DaskMixin):
    """Every test of Dask's mixin, with `self.get` a DaskScheduler."""

    @pytest.fixture(autouse=True)
    def _get(self, scheduler):
        self.get = scheduler


class TestLocalGet(_DaskMixin):
    """Every test of Dask's mixin, with `self.get` the module's `get` (connected at first use)."""

    @pytest.fixture(autouse=True)
    def _get(self, local_get):
        self.get = local_get
