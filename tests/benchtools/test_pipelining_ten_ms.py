"""benchtools/pipelining_ten_ms.py: its settings reach the node monitors (each variable it sets is a node-monitor
setting, with a value it takes), and bad arguments are refused."""

from __future__ import annotations

import subprocess
import sys

from benchtools import pipelining_ten_ms
from sparrow_runtime.cli.options import NODE_MONITOR_SETTINGS


def test_each_setting_it_measures_is_a_valid_node_monitor_variable() -> None:
    """Every SPARROW_* variable of its settings names a node-monitor setting and holds a value it takes (a renamed
    setting or mode would make the benchmark measure the default twice, or fail at the node monitors), and the
    settings differ."""
    known = {setting.env: setting for setting in NODE_MONITOR_SETTINGS}
    variables = list(pipelining_ten_ms.SETTINGS.values())
    for env in variables:
        for name, value in env.items():
            known[name].kind.from_text(value)  # raises ValueError for a value the setting does not take
    assert len({tuple(sorted(env.items())) for env in variables}) == len(variables)


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchtools.pipelining_ten_ms", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_zero_rounds_are_refused() -> None:
    """--rounds 0 is a usage error naming the option."""
    run = _script("--rounds", "0")
    assert run.returncode == 2 and "--rounds" in run.stderr


def test_an_unknown_setting_is_refused_naming_it() -> None:
    """--settings with a name it does not measure is a usage error naming it (before any cluster starts)."""
    run = _script("--settings", "default,steadyy")
    assert run.returncode == 2 and "steadyy" in run.stderr
