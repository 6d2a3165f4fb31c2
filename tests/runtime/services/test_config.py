"""SchedulerConfig and NodeMonitorConfig: a service's settings as one frozen object; a bad value is refused at
construction, naming its field."""

from __future__ import annotations

import pytest

from sparrow_runtime import NodeMonitorConfig, SchedulerConfig


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"probe_ratio": 0.5}, "probe"),
        ({"bind_idle": 1}, "bind_idle must be a bool"),
        ({"node_timeout": 0}, "node_timeout must be a number of seconds > 0"),
        ({"client_grace": -1}, "client_grace must be a number of seconds >= 0"),
        ({"placement_timeout": float("inf")}, "placement_timeout"),
        ({"max_client_tasks": 0}, "max_client_tasks must be an int >= 1"),
        ({"result_delay": -0.1}, "result_delay"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"node_monitors": "h:1"}, "one string"),
        ({"node_monitors": ["nohost"]}, "nohost"),
        ({"link": {"secret": "s"}}, "link must be a LinkConfig"),
    ],
)
def test_a_bad_scheduler_config_names_its_field(fields, message):
    with pytest.raises(ValueError, match=message):
        SchedulerConfig(**fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"slots": 0}, "slots must be an int >= 1"),
        ({"policy": "lifo"}, "policy must be one of"),
        ({"weights": {"alice": -1}}, "weights:"),
        ({"executor": "fiber"}, "executor must be one of process, thread"),
        ({"pipeline": "eager"}, "pipeline must be one of"),
        ({"pipeline_depth": 0}, "pipeline_depth"),
        ({"give_back": 1}, "give_back must be a bool"),
        ({"heartbeat_interval": 2.0, "scheduler_timeout": 2.0}, "must be shorter than"),
        ({"inline_limit": -1}, "inline_limit must be an int of bytes >= 0"),
        ({"memory_limit": 1.5}, "memory_limit must be an int of bytes >= 0"),
        ({"schedulers": "h:1"}, "schedulers must be a sequence"),
        ({"schedulers": ["nohost"]}, "nohost"),
    ],
)
def test_a_bad_node_monitor_config_names_its_field(fields, message):
    with pytest.raises(ValueError, match=message):
        NodeMonitorConfig(**fields)


def test_a_node_monitor_config_keeps_its_addresses_parsed_and_its_defaults_are_the_services():
    config = NodeMonitorConfig(schedulers=["h:1", "unix:/run/s.sock"], labels=["ssd"])
    assert config.schedulers == (("h", 1), ("unix:/run/s.sock", 0)) and config.labels == ("ssd",)
    assert (config.pipeline, config.pipeline_depth, config.executor, config.slots) == ("steady", 16, "process", None)
