"""A service's config object built from its command's settings: one set of defaults (every config
field's default is its setting's), every setting reaches its field, and bad values name the field."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from sparrow_runtime import LinkConfig, SchedulerConfig
from sparrow_runtime.cli.options import COMMANDS
from sparrow_runtime.cli.service_config import LINK_FIELDS, scheduler_config
from sparrow_runtime.services.config import SCHEDULER_SETTINGS, setting_flags
from sparrow_runtime.services.scheduler_logic import SchedulerLogic

from .test_config import settings


def _defaults(config_class: type) -> dict[str, object]:
    return {f.name: f.default for f in dataclasses.fields(config_class) if f.default is not dataclasses.MISSING}


@pytest.mark.parametrize(
    ("command", "config_class", "fields"),
    [("scheduler", SchedulerConfig, SCHEDULER_SETTINGS), ("scheduler", LinkConfig, LINK_FIELDS)],
)
def test_every_config_default_is_its_settings_default(command, config_class, fields):
    """The command, the library and LocalCluster start from the same values: a field read from a setting has
    that setting's default (None where the setting is unset by default)."""
    table = {s.name: s for s in COMMANDS[command]}
    defaults = _defaults(config_class)
    for field, setting in fields.items():
        expected = table[setting].default
        assert defaults[field] == (() if expected == [] else expected), field


def test_the_scheduler_logic_defaults_are_the_configs():
    """The logic class takes the service's defaults (one set): bind_idle, probe ratio, timeouts, frame limit."""
    parameters = inspect.signature(SchedulerLogic).parameters
    for name, value in SchedulerConfig().logic_options("s").items():
        if name != "scheduler_id":
            assert parameters[name].default == value, name


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
