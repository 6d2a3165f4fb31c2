"""Both `sparrow experiment` commands start their clusters with bind_idle off, the rule the simulator predicting them
lacks (the services' default is on)."""

from __future__ import annotations

import pytest

from sparrow_runtime.cli import experiment, experiment_steal
from sparrow_runtime.cli.main import main


class _ClusterStarted(Exception):
    """Raised by the stand-in LocalCluster once it has seen its arguments."""


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (experiment, ["experiment", "cluster", "--runs", "1", "--seconds", "1"]),
        (experiment_steal, ["experiment", "steal", "--runs", "1", "--seconds", "1"]),
    ],
)
def test_an_experiment_starts_its_cluster_with_bind_idle_off(module, argv, monkeypatch, tmp_path):
    """The command's LocalCluster gets bind_idle=False, whatever the services' default."""
    seen: list[dict] = []

    def stand_in(*args, **kwargs):
        seen.append(kwargs)
        raise _ClusterStarted

    monkeypatch.setattr(module, "LocalCluster", stand_in)
    with pytest.raises(_ClusterStarted):
        main([*argv, "--out", str(tmp_path / "out")])
    assert seen and seen[0]["bind_idle"] is False
