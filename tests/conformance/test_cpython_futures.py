"""CPython's own tests of `concurrent.futures` (cpython/concurrent_futures_tests.py, vendored: see
README.md) run against SparrowExecutor on a LocalCluster of process executors, the way uvloop and loky
run the standard library's tests against their own implementations.

Every executor-generic test class runs (shutdown, wait, as_completed, the executor's own tests, and
the process pool's tests of errors at each step of a task's way); EXCLUDED names each test left out
and why: those of a thread or process pool's internals (`max_workers`, `_processes`, initializers,
`mp_context`), and the few whose contract Sparrow keeps differently on purpose (docs/futures.md)."""

from __future__ import annotations

import os
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest

# the vendored tests import test.support at their top: without it, skip saying why
pytest.importorskip("test.support", reason="CPython's test.support helpers (the Python's own test package)")

from sparrow_runtime import LocalCluster, NodeMonitorConfig
from sparrow_runtime.wire.auth import SECRET_ENV

from .cpython import concurrent_futures_tests as cpython
from .sparrow_pool import SCHEDULERS_ENV, SparrowPoolExecutor

ROOT = Path(__file__).resolve().parents[2]

_BROKEN_POOL = (
    "expects BrokenProcessPool, a process pool's state: a Sparrow worker that dies is replaced and its task "
    "fails alone (TaskFailed), the executor goes on"
)
_REMOTE_PRINT = "the task prints on the cluster's worker, not in the submitting process (test_executor_contract.py)"
_INTERNALS = "a process pool's internals"

EXCLUDED = {
    "ExecutorShutdownTest.test_interpreter_shutdown": _REMOTE_PRINT,
    "ExecutorShutdownTest.test_hang_gh83386": _REMOTE_PRINT,
    "ExecutorShutdownTest.test_cancel_futures": (
        "assumes some of 50 tasks submitted back to back started before the shutdown(cancel_futures=True) right "
        "after them; on a cluster a task starts a round trip after its submit, and the cancel overtakes them all. "
        "What it checks (started tasks finish, the others are cancelled): test_executor_contract.py"
    ),
    "ProcessPoolExecutorTest.test_max_workers_negative": "max_workers: the cluster's slots decide",
    "ProcessPoolExecutorTest.test_max_workers_too_large": "max_workers: the cluster's slots decide",
    "ProcessPoolExecutorTest.test_killed_child": _INTERNALS + " (_processes)",
    "ProcessPoolExecutorTest.test_ressources_gced_in_workers": "mp_context's Manager",
    "ProcessPoolExecutorTest.test_saturation": _INTERNALS + " (_processes)",
    "ProcessPoolExecutorTest.test_idle_process_reuse_one": _INTERNALS + " (_processes)",
    "ProcessPoolExecutorTest.test_idle_process_reuse_multiple": _INTERNALS + " (_processes)",
    "ProcessPoolExecutorTest.test_max_tasks_per_child": _INTERNALS + " (max_tasks_per_child)",
    "ProcessPoolExecutorTest.test_max_tasks_per_child_defaults_to_spawn_context": _INTERNALS + " (max_tasks_per_child)",
    "ProcessPoolExecutorTest.test_max_tasks_early_shutdown": _INTERNALS + " (max_tasks_per_child)",
    "ProcessPoolExecutorTest.test_traceback": (
        "the remote traceback is the __cause__ as the test wants, but a Sparrow type, not "
        "concurrent.futures.process._RemoteTraceback"
    ),
    "ExecutorDeadlockTest.test_error_at_task_pickle": (
        "a task is pickled in submit(), so an argument that cannot be pickled raises TypeError there (naming the "
        "task, its cause the PicklingError), not from result(): docs/futures.md"
    ),
    "ExecutorDeadlockTest.test_exit_at_task_unpickle": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_error_at_task_unpickle": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_crash_at_task_unpickle": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_crash_during_func_exec_on_worker": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_crash_during_result_pickle_on_worker": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_error_during_result_unpickle_in_result_handler": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_exit_during_result_unpickle_in_result_handler": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_shutdown_deadlock": _BROKEN_POOL,
    "ExecutorDeadlockTest.test_shutdown_deadlock_pickle": _INTERNALS + " (_executor_manager_thread)",
}
# Failing today, each a contract defect to fix (docs/futures.md): expected to fail, so a fix shows as an
# unexpected success until its entry goes.
KNOWN_FAILURES: dict[str, str] = {}
# Not run at all: the test classes of the thread pool (its threads), of the process pool's shutdown
# (its processes and queues), of initializers, and FutureTests (the standard library's Future itself).


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[LocalCluster]:
    """The cluster every SparrowPoolExecutor of this module uses, named in the environment (so in the
    tests' child processes too): 5 slots, as the tests' pools have 5 workers."""
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=5, dashboard=False
    ) as cluster:
        saved = {name: os.environ.get(name) for name in (SCHEDULERS_ENV, SECRET_ENV)}
        os.environ[SCHEDULERS_ENV] = ",".join(cluster.schedulers)
        os.environ[SECRET_ENV] = cluster.secret
        try:
            yield cluster
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


class SparrowMixin(cpython.ExecutorMixin):
    executor_type = SparrowPoolExecutor
    # how the tests' child processes import it (they run isolated: no current directory on sys.path)
    executor_import = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.conformance.sparrow_pool import *"

    def get_context(self) -> None:
        return None  # mp_context: not used


def _against_sparrow(tests: type) -> type[unittest.TestCase]:
    """`tests` (a mixin of test methods) as a TestCase on SparrowPoolExecutor, as CPython's
    create_executor_tests makes one per pool, with the EXCLUDED tests skipped with their reason."""
    case = type(f"Sparrow{tests.__name__}", (tests, SparrowMixin, cpython.BaseTestCase), {"__module__": __name__})
    for key, reason in EXCLUDED.items():
        owner, name = key.split(".")
        if owner == tests.__name__:
            setattr(case, name, unittest.skip(reason)(getattr(case, name)))
    for key in KNOWN_FAILURES:
        owner, name = key.split(".")
        if owner == tests.__name__:
            setattr(case, name, unittest.expectedFailure(getattr(case, name)))
    return case


SparrowExecutorShutdownTest = _against_sparrow(cpython.ExecutorShutdownTest)
SparrowWaitTests = _against_sparrow(cpython.WaitTests)
SparrowAsCompletedTests = _against_sparrow(cpython.AsCompletedTests)
SparrowProcessPoolExecutorTest = _against_sparrow(cpython.ProcessPoolExecutorTest)
SparrowExecutorDeadlockTest = _against_sparrow(cpython.ExecutorDeadlockTest)


def test_every_exclusion_names_a_test_that_exists():
    """A renamed or removed test cannot keep an exclusion alive."""
    for key in (*EXCLUDED, *KNOWN_FAILURES):
        owner, name = key.split(".")
        assert callable(getattr(getattr(cpython, owner), name, None)), key
