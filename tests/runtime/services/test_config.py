"""SchedulerConfig: a scheduler's settings as one frozen object; a bad value is refused at construction,
naming its field."""

from __future__ import annotations

import pytest

from sparrow_runtime import SchedulerConfig


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
