"""CPU lists, pinning, and the CPU layout of a local cluster (cpus.py, LocalCluster)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sparrow_runtime import LocalCluster
from sparrow_runtime.services.cpus import (
    available_cpus,
    format_cpu_list,
    local_layout,
    parse_cpu_list,
    pin_process,
)

from ...process_tree import descendants


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0", [0]), ("0-3", [0, 1, 2, 3]), ("0-2,6", [0, 1, 2, 6]), ("5, 1-2 ,1", [1, 2, 5]), ("7-7", [7])],
)
def test_cpu_lists_parse_and_format_back(text, cpus):
    assert parse_cpu_list(text) == cpus
    assert parse_cpu_list(format_cpu_list(cpus)) == cpus


def test_a_cpu_past_any_real_machine_is_a_typo_not_a_huge_list():
    with pytest.raises(ValueError, match="CPU list '0-4294967295': '0-4294967295' goes past CPU 65535"):
        parse_cpu_list("0-4294967295")
    assert parse_cpu_list("65535") == [65535]


def test_format_joins_runs():
    assert format_cpu_list([6, 0, 1, 2, 4, 2]) == "0-2,4,6"
    assert format_cpu_list([]) == ""


@pytest.mark.parametrize("text", ["", "a", "1-", "-1", "3-1", "0,,1", "1.5", "0-x"])
def test_malformed_cpu_list_names_the_bad_part(text):
    with pytest.raises(ValueError, match=r"CPU list .*is not a CPU number or a range like 0-3"):
        parse_cpu_list(text)


def test_layout_gives_node_monitors_equal_shares_and_schedulers_cpus_from_the_end():
    assert local_layout(1, 2, [0, 1]) == ([[1]], [[0], [1]])
    assert local_layout(1, 2, [0, 1, 2, 3]) == ([[3]], [[0, 1], [2, 3]])
    assert local_layout(2, 3, [0, 1, 2, 3, 4, 5, 6, 7]) == ([[7], [6]], [[0, 1], [2, 3, 4], [5, 6, 7]])
    assert local_layout(1, 1, [2, 5]) == ([[5]], [[2, 5]])


def test_layout_with_more_services_than_cpus_wraps_around():
    assert local_layout(3, 5, [0, 1]) == ([[1], [0], [1]], [[0], [1], [0], [1], [0]])
    assert local_layout(1, 4, [3]) == ([[3]], [[3], [3], [3], [3]])


def test_layout_needs_a_service_and_a_cpu():
    for args in ((0, 1, [0]), (1, 0, [0]), (1, 1, [])):
        with pytest.raises(ValueError, match="at least one scheduler, one node monitor and one CPU"):
            local_layout(*args)


def _pin_in_child(cpus) -> subprocess.CompletedProcess:
    code = (
        "import os; from sparrow_runtime.services.cpus import pin_process; "
        f"pin_process({cpus!r}); print(sorted(os.sched_getaffinity(0)))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_pin_process_restricts_this_process():
    cpu = available_cpus()[-1]
    done = _pin_in_child([cpu])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"[{cpu}]"


def test_pinning_to_a_cpu_not_available_is_refused_naming_the_available_ones():
    allowed = format_cpu_list(available_cpus())
    with pytest.raises(ValueError, match=rf"cannot run on CPUs 4096: this process may use {allowed}"):
        pin_process([4096])
    with pytest.raises(ValueError, match=r"cannot run on CPUs \(none\)"):
        pin_process([])
    assert format_cpu_list(available_cpus()) == allowed  # unchanged


def _cpus_of(pid: int) -> list[int]:
    return sorted(os.sched_getaffinity(pid))


@pytest.mark.skipif(len(available_cpus()) < 2, reason="needs two CPUs to lay out")
def test_local_cluster_runs_each_node_monitor_and_its_workers_on_its_own_cpus():
    cpus = available_cpus()
    with LocalCluster(schedulers=1, node_monitors=2, slots=2) as cluster:
        scheduler_cpus, node_cpus = local_layout(1, 2, cpus)
        assert cluster.node_monitor_cpus == node_cpus and cluster.scheduler_cpus == scheduler_cpus
        assert _cpus_of(cluster.pids[0]) == scheduler_cpus[0]
        for pid, share in zip(cluster.node_monitor_pids, node_cpus, strict=True):
            assert _cpus_of(pid) == share
            below = descendants(pid)  # its fork server and the 2 workers it forked
            assert len(below) == 3 and all(_cpus_of(w) == share for w in below)
        assert set(node_cpus[0]).isdisjoint(node_cpus[1])


def test_local_cluster_with_share_cpus_lets_every_service_use_every_cpu():
    with LocalCluster(schedulers=1, node_monitors=2, slots=1, share_cpus=True) as cluster:
        for pid in cluster.pids:
            assert _cpus_of(pid) == available_cpus()


def test_without_pinning_support_the_cluster_shares_cpus_and_pinning_is_refused(monkeypatch):
    """Where the system cannot pin (not Linux), a local cluster still starts, and --cpus says why it cannot."""
    monkeypatch.delattr(os, "sched_setaffinity")
    with pytest.raises(ValueError, match="this system cannot restrict a process to some CPUs"):
        pin_process([0])
    cluster = LocalCluster(schedulers=1, node_monitors=2)
    assert cluster.share_cpus and cluster.node_monitor_cpus == [available_cpus()] * 2
