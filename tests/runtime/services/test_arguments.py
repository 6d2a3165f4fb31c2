"""The shared constructor checks (services/arguments.py), and that each service class applies them to every
flag and count it takes: a wrong type is refused by name, before anything starts."""

from __future__ import annotations

import pytest

from sparrow_runtime.services.arguments import check_counts, check_flags
from sparrow_runtime.services.config import NodeMonitorConfig, SchedulerConfig
from sparrow_runtime.services.local_cluster import LocalCluster
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.scheduler_logic import SchedulerLogic


def test_check_flags_accepts_bools_only() -> None:
    check_flags(a=True, b=False)
    check_flags()
    for bad in (1, 0, "yes", None, 1.0):
        with pytest.raises(ValueError, match=rf"^b must be a bool, got {bad!r}$"):
            check_flags(a=True, b=bad)


def test_check_flags_names_the_first_bad_one() -> None:
    with pytest.raises(ValueError, match=r"^a must be a bool"):
        check_flags(a="no", b="no")


def test_check_counts_accepts_ints_from_one() -> None:
    check_counts(a=1, b=10**9)
    for bad in (0, -1, 1.0, "2", None):
        with pytest.raises(ValueError, match=rf"^b must be an int >= 1, got {bad!r}$"):
            check_counts(a=1, b=bad)


@pytest.mark.parametrize(
    ("config", "flag"), [(NodeMonitorConfig, "give_back"), (NodeMonitorConfig, "steal"), (SchedulerConfig, "bind_idle")]
)
def test_a_config_refuses_a_flag_that_is_not_a_bool(config: type, flag: str) -> None:
    with pytest.raises(ValueError, match=rf"^{flag} must be a bool, got 'yes'$"):
        config(**{flag: "yes"})


@pytest.mark.parametrize("count", ["schedulers", "node_monitors", "slots"])
def test_local_cluster_refuses_a_count_below_one(count: str) -> None:
    with pytest.raises(ValueError, match=rf"^{count} must be an int >= 1, got 0$"):
        LocalCluster(**{count: 0})


@pytest.mark.parametrize("flag", ["give_back"])
def test_node_monitor_logic_refuses_a_flag_that_is_not_a_bool(flag: str) -> None:
    with pytest.raises(ValueError, match=rf"^{flag} must be a bool, got 1$"):
        NodeMonitorLogic(NodeMonitorConfig(slots=1, **{flag: 1}))
    with pytest.raises(ValueError, match=r"^slots must be an int >= 1, got 0$"):
        NodeMonitorLogic(NodeMonitorConfig(slots=0))


def test_scheduler_logic_refuses_a_bad_flag_or_count() -> None:
    with pytest.raises(ValueError, match=r"^bind_idle must be a bool, got 'on'$"):
        SchedulerLogic(bind_idle="on")  # type: ignore[arg-type]  # the wrong type is the test
    with pytest.raises(ValueError, match=r"^max_client_tasks must be an int >= 1, got 0$"):
        SchedulerLogic(max_client_tasks=0)
