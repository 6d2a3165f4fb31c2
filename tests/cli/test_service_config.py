"""A service's config object built from its command's settings: one set of defaults (every config
field's default is its setting's), every setting reaches its field, and bad values name the field."""

from __future__ import annotations

import inspect
import os

import pytest

from sparrow_runtime import LinkConfig, NodeMonitorConfig, SchedulerConfig
from sparrow_runtime.cli.options import COMMANDS
from sparrow_runtime.cli.service_config import LINK_FIELDS, node_monitor_config, scheduler_config
from sparrow_runtime.services.config import NODE_MONITOR_SETTINGS, SCHEDULER_SETTINGS, setting_flags
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.services.pipeline import make_pipeline
from sparrow_runtime.services.scheduler_logic import SchedulerLogic

from .test_config import settings


@pytest.mark.parametrize(
    ("command", "config_class", "fields"),
    [
        ("scheduler", SchedulerConfig, SCHEDULER_SETTINGS),
        ("scheduler", LinkConfig, LINK_FIELDS),
        ("node-monitor", NodeMonitorConfig, NODE_MONITOR_SETTINGS),
    ],
)
def test_every_config_default_is_its_settings_default(command, config_class, fields):
    """The command, the library and LocalCluster start from the same values: a field read from a setting has
    that setting's default (None where the setting is unset by default)."""
    table = {s.name: s for s in COMMANDS[command]}
    config = config_class()
    for field, setting in fields.items():
        value, expected = getattr(config, field), table[setting].default
        assert value == (tuple(expected or ()) if isinstance(value, tuple) else expected), field


def test_the_scheduler_logic_defaults_are_the_configs():
    """SchedulerLogic takes the service's defaults (one set): bind_idle, probe ratio, timeouts."""
    parameters = inspect.signature(SchedulerLogic).parameters
    for name, value in SchedulerConfig().logic_options("s").items():
        if name != "scheduler_id":
            assert parameters[name].default == value, name


def test_the_node_monitor_logic_runs_as_its_config_says():
    """NodeMonitorLogic takes its NodeMonitorConfig whole (one set of defaults): given none, it runs as the
    config's defaults; given one, as each of its settings says."""
    default, logic = NodeMonitorConfig(), NodeMonitorLogic()
    assert logic.slots == (os.cpu_count() or 1)
    assert (logic.pipeline_depth, logic.give_back, logic.stealing.steal) == (default.pipeline_depth, False, False)
    assert (logic.inline_limit, logic.max_frame) == (default.inline_limit, default.link.max_frame)
    assert type(logic.pipeline) is type(make_pipeline(default.pipeline))
    config = NodeMonitorConfig(
        slots=3,
        pipeline="always",
        pipeline_depth=2,
        give_back=True,
        steal=True,
        inline_limit=7,
        link=LinkConfig(max_frame=4096),
    )
    logic = NodeMonitorLogic(config)
    assert (logic.slots, logic.pipeline_depth, logic.give_back, logic.stealing.steal) == (3, 2, True, True)
    assert (logic.inline_limit, logic.max_frame) == (7, 4096)
    assert type(logic.pipeline) is type(make_pipeline("always"))


def test_every_scheduler_setting_reaches_its_config_field():
    s = settings(
        "scheduler",
        [
            "--probe-ratio",
            "1.5",
            "--no-bind-idle",
            "--seed",
            "4",
            "--node-timeout",
            "3",
            "--client-timeout",
            "7",
            "--placement-timeout",
            "0",
            "--max-client-tasks",
            "9",
            "--client-grace",
            "1",
            "--result-delay",
            "0",
            "--max-frame",
            "4096",
            "--id",
            "s1",
            "--node-monitor",
            "h:1",
            "--listen",
            "127.0.0.1:0",
        ],
    )
    config = scheduler_config(s, {"secret": b"k"})
    assert config == SchedulerConfig(
        link=LinkConfig(secret=b"k", max_frame=4096),
        host="127.0.0.1",
        port=0,
        scheduler_id="s1",
        node_monitors=("h:1",),
        probe_ratio=1.5,
        bind_idle=False,
        seed=4,
        placement_timeout=0.0,
        max_client_tasks=9,
        client_grace=1.0,
        node_timeout=3.0,
        client_timeout=7.0,
        result_delay=0.0,
    )
    assert config.node_monitors == (("h", 1),)


def test_a_config_passed_as_flags_reads_back_as_the_same_config():
    """LocalCluster gives its schedulers their config as flags (config.setting_flags): what `sparrow scheduler`
    reads from them is that config; a field at its default gives no flag (the service's own sources decide)."""
    config = SchedulerConfig(
        probe_ratio=1.5,
        bind_idle=False,
        seed=4,
        placement_timeout=0.0,
        max_client_tasks=9,
        node_timeout=3.0,
        result_delay=0.0,
        node_monitors=("h:1", "unix:/run/nm.sock"),
    )
    flags = setting_flags(config, SCHEDULER_SETTINGS)
    assert "--no-bind-idle" in flags and "--client-timeout" not in flags
    assert setting_flags(SchedulerConfig(), SCHEDULER_SETTINGS) == []
    assert scheduler_config(settings("scheduler", [*flags, "--listen", "127.0.0.1:0"]), {}) == config


def test_a_node_monitor_config_passed_as_flags_reads_back_as_the_same_config():
    """The same round trip for a node monitor: lists repeat their flag, a table gives USER=WEIGHT per entry."""
    config = NodeMonitorConfig(
        schedulers=("h:1", "h:2"),
        slots=3,
        labels=("ssd", "gpu"),
        policy="fair",
        weights={"alice": 3.0, "bob": 1.0},
        executor="thread",
        pipeline="gated",
        pipeline_depth=4,
        give_back=True,
        steal=True,
        heartbeat_interval=0.25,
        inline_limit=1000,
        memory_limit=10**6,
    )
    flags = setting_flags(config, NODE_MONITOR_SETTINGS)
    assert flags.count("--scheduler") == 2 and flags.count("--weight") == 2
    assert setting_flags(NodeMonitorConfig(), NODE_MONITOR_SETTINGS) == []
    s = settings("node-monitor", [*flags, "--listen", "127.0.0.1:0"])
    assert node_monitor_config(s, {}) == config
