"""bench/bench_dask.py on tiny graphs: each system computes them, and Sparrow sends a wide graph's
stages as whole waves (the distributed round is skipped without the optional `peers` extra)."""

import math

import pytest

pytest.importorskip("dask")

from bench.bench_dask import chain_graph, distributed_round, local_round, sparrow_round, wide_graph


def test_sparrow_round_times_each_graph_and_sends_each_stage_of_the_wide_graph_as_one_wave():
    """Each graph is timed, its waves and tasks counted, and the bytes through the client and the
    scheduler measured: the scheduler relays what it takes, so at most twice the client's bytes pass it."""
    graphs = {"wide": wide_graph(stages=3, width=20), "chain": chain_graph(length=5)}
    results = sparrow_round(graphs, "thread", wide_shape=(3, 20))
    assert all(math.isfinite(r[0]) and r[0] > 0 and r[3] >= 0 for r in results.values())
    for _, _, tasks, _, through_client, through_scheduler in results.values():
        assert through_client >= tasks and 0 < through_scheduler <= 2 * through_client
    assert results["wide"][1:3] == (6, 63)  # 3 stages: a wave of 20, then a wave of its barrier task
    assert results["chain"][1:3] == (5, 5)
    assert results["wide without Dask"][1:3] == (6, 63)


def test_local_round_times_each_graph():
    seconds = local_round({"chain": chain_graph(length=5)})
    assert math.isfinite(seconds["chain"]) and seconds["chain"] > 0


def test_distributed_round_times_each_graph():
    pytest.importorskip("distributed")
    seconds = distributed_round({"chain": chain_graph(length=5)})
    assert math.isfinite(seconds["chain"]) and seconds["chain"] > 0
