"""LocalCluster(resources=...): each node monitor offers what it is given (`--resources`), and a map asking
for GPUs runs each task on a node monitor with one free, with device ids of its own there."""

from __future__ import annotations

import os
import time

import pytest

from sparrow_runtime import LocalCluster, SparrowExecutor


def _where(_: int) -> tuple[str | None, str | None]:
    time.sleep(0.05)
    return os.environ.get("SPARROW_NODE"), os.environ.get("SPARROW_GPUS")


def test_node_monitors_offer_what_they_are_given_and_gpu_tasks_get_their_own_ids():
    with (
        LocalCluster(node_monitors=2, slots=2, resources=[{"gpu": 1}, "gpu=2"], dashboard=False) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex,
    ):
        found = list(ex.map(_where, range(8), resources={"gpu": 1}))
    ids = {node: set() for node in cluster.node_ids}
    for node, gpus in found:
        ids[node].add(gpus)
    assert ids[cluster.node_ids[0]] <= {"0"} and ids[cluster.node_ids[1]] <= {"0", "1"}


def test_a_bad_amount_or_count_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="gpu=-1"):
        LocalCluster(node_monitors=1, resources={"gpu": -1}, dashboard=False)
    with pytest.raises(ValueError, match="one entry per node monitor"):
        LocalCluster(node_monitors=2, resources=[{"gpu": 1}], dashboard=False)
