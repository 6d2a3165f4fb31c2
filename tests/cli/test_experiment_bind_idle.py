"""Both `sparrow experiment` commands start their clusters with bind_idle off, the rule the simulator predicting them
lacks (the services' default is on)."""

from __future__ import annotations

import pytest

from sparrow_runtime.cli import experiment_flags
from sparrow_runtime.cli.main import main


class _ClusterStarted(Exception):
    """Raised by the stand-in LocalCluster once it has seen its arguments."""


@pytest.mark.parametrize(
    "argv",
    [
        ["experiment", "cluster", "--runs", "1", "--seconds", "1"],
        ["experiment", "steal", "--runs", "1", "--seconds", "1"],
    ],
)
def test_an_experiment_starts_its_cluster_with_bind_idle_off(argv, monkeypatch, tmp_path):
    """The command's LocalCluster (experiment_flags.experiment_cluster's) gets a scheduler config of
    bind_idle=False, whatever the services' default, and the cluster the flags describe."""
    seen: list[tuple[tuple, dict]] = []

    def stand_in(*args, **kwargs):
        seen.append((args, kwargs))
        raise _ClusterStarted

    monkeypatch.setattr(experiment_flags, "LocalCluster", stand_in)
    with pytest.raises(_ClusterStarted):
        main([*argv, "--out", str(tmp_path / "out"), "--node-monitors", "3", "--executor", "thread"])
    args, kwargs = seen[0]
    assert kwargs["scheduler"].bind_idle is False and kwargs["node_monitor"].executor == "thread" and args[1] == 3
