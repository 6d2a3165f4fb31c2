"""LocalCluster's services log at its `log_level` to this process's standard error, one line per event,
never showing the cluster secret."""

import pytest

from sparrow_runtime import LocalCluster


def test_services_log_at_the_clusters_level_without_the_secret(capfd):
    with LocalCluster(schedulers=1, node_monitors=1, log_level="info") as cluster:
        secret = cluster.secret
    err = capfd.readouterr().err
    assert "sparrow_runtime.services.scheduler: scheduler scheduler-0 listening on" in err
    assert "sparrow_runtime.services.node_monitor: registered with" in err
    assert secret not in err


def test_default_level_keeps_the_services_quiet(capfd):
    with LocalCluster(schedulers=1, node_monitors=1):
        pass
    assert "listening on" not in capfd.readouterr().err


def test_unknown_log_level_is_refused():
    with pytest.raises(ValueError, match="log_level must be one of debug, info, warning, error, got 'loud'"):
        LocalCluster(log_level="loud")
