"""Fixtures shared by the test directories, and the order of the test files (slowest first) that
keeps both of CI's pytest workers busy to the end."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

# The slowest test files, slowest first (seconds a file took in a `-n 2` run of the whole suite at load 5-6,
# 2026-12-02). .ci/run hands out whole files in collection order (`--dist loadfile --no-loadscope-reorder`):
# started first, these leave only short files for the end, so neither worker waits idle on the other's last
# long file (xdist's default order, the files with most tests first, ran these last). Every other file
# follows in its usual order. tests/test_ci_order.py checks that each entry is a test file.
SLOWEST_FILES = (
    "tests/hostile/test_hostile_peers.py",  # 216 s
    "tests/benchtools/test_history_and_gate.py",  # 174
    "tests/hostile/test_stalls.py",  # 121
    "tests/deploy/test_netns_tls.py",  # 89
    "tests/cli/test_simulate.py",  # 84
    "tests/cli/test_submit_control.py",  # 80
    "tests/cli/test_errors.py",  # 74
    "tests/cli/test_services.py",  # 67
    "tests/docs/test_site.py",  # 64
    "tests/runtime/client/test_fault_tolerance.py",  # 56
    "tests/conformance/test_cpython_futures.py",  # 45-70 (CPython's executor tests on a cluster)
    "tests/runtime/test_joblib.py",  # 50 (a grid search three ways, scikit-learn imported in the workers)
    "tests/runtime/test_dask_get_conformance.py",  # 45 (Dask's 10,000-task chain, twice)
    "tests/runtime/services/test_node_monitor_pipelining.py",  # 44
    "tests/cli/test_one_front_door.py",  # 41
    "tests/runtime/client/test_close.py",  # 37
    "tests/cli/test_local.py",  # 37
    "tests/core/test_job_probes.py",  # 36
    "tests/runtime/test_dask.py",  # 33
    "tests/bench/test_bench_peers.py",  # 31
    "tests/runtime/client/test_large_messages.py",  # 31
    "tests/cli/test_experiment.py",  # 31
    "tests/cli/test_demo.py",  # 29
    "tests/runtime/services/test_steal_faults.py",  # 27
    "tests/benchtools/test_failover.py",  # 25
    "tests/runtime/data/test_loop_steps.py",  # 23
    "tests/runtime/services/test_local_cluster.py",  # 22
    "tests/runtime/data/test_big_values.py",  # 22
    "tests/runtime/client/test_scatter.py",  # 21
    "tests/core/test_reservation_queue.py",  # 20
    "tests/runtime/services/test_scheduler_bind_idle.py",  # 19
    "tests/runtime/data/test_client_memory.py",  # 19
    "tests/runtime/data/test_scatter_lost.py",  # 18
    "tests/runtime/data/test_lost_values.py",  # 18
)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (by parametrized fixtures) within each file
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of SLOWEST_FILES first, in its order; each file's tests keep their order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 that something else listens on (for the tests of 'address in use')."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
