"""bench/bench_data.py on small graphs: the shuffle graph computes what numpy computes, and a Sparrow round
on 2 node monitors times each graph and measures the bytes through its client and its scheduler (the
distributed round is skipped without the optional `peers` extra)."""

import math

import numpy as np
import pytest

pytest.importorskip("dask")

import dask

from bench.bench_dask import distributed_round, timed_cpu
from bench.bench_data import make_block, shuffle_graph, sparrow_round


def test_the_shuffle_graph_reads_every_input_in_every_output():
    """3 parts of 800 bytes: output j sums the j-th slice of every block plus their sizes."""
    outputs = dask.compute(*shuffle_graph(parts=3, n_bytes=800), scheduler="sync")
    blocks = [make_block(i, 800) for i in range(3)]
    want = [sum(b[j::16].sum() + b.size for b in blocks) for j in range(3)]
    np.testing.assert_allclose(outputs, want)


def test_sparrow_round_times_the_graphs_and_counts_their_bytes():
    """A shuffle of 3 inputs of 40 kB on 2 node monitors: every figure is there, and the client and the
    scheduler saw at least the outputs' results (at most twice the client's bytes pass the scheduler)."""
    results = sparrow_round({"shuffle": shuffle_graph(parts=3, n_bytes=40_000)}, node_monitors=2, executor="thread")
    seconds, tasks, through_client, through_scheduler, cpu = results["shuffle"]
    assert math.isfinite(seconds) and seconds > 0 and tasks == 6 and cpu > 0
    assert through_client > 0 and 0 < through_scheduler <= 2 * through_client


def test_distributed_round_times_the_shuffle_graph():
    """Dask distributed on 2 workers computes the shuffle graph, timed in wall and CPU seconds."""
    pytest.importorskip("distributed")
    graphs = {"shuffle": shuffle_graph(parts=2, n_bytes=800)}
    seconds, cpu = distributed_round(graphs, workers=2, measure=timed_cpu)["shuffle"]
    assert math.isfinite(seconds) and seconds > 0 and cpu > 0
