"""A graph whose intermediates total 2 GB: 16 results of 128 MB stay at their node monitors, their
dependents run there, and none of it passes through the client."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import resource
    from sparrow_runtime import LocalCluster, SparrowExecutor

    def block(i):
        return bytes([i]) * (128 * 1024 * 1024)

    def checksum(b):
        return len(b) * b[0]

    with LocalCluster(node_monitors=2, slots=1, dashboard=False) as cluster:
        with SparrowExecutor(cluster.schedulers, secret=cluster.secret) as ex:
            sums = []
            for i in range(8):  # two blocks alive at a time: 256 MB held on the cluster at most
                blocks = [ex.submit(block, 2 * i + k) for k in range(2)]
                sums += [ex.submit(checksum, b).result(timeout=300) for b in blocks]
                del blocks
            traffic = ex.client._logic.traffic
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(sum(sums), ex.client._links.fetched, traffic["bytes_received"] + traffic["bytes_sent"], peak)
    """
)


@pytest.mark.slow
def test_2_gb_of_intermediates_go_through_a_client_that_carries_none_of_them():
    """16 blocks of 128 MB (2 GB in all) made and consumed on the cluster: the sums are right, the client
    fetched none of them and sent and received less than 1 MB in all. (Its peak memory, printed, was
    under 300 MB alone and over 1 GB in one loaded run of the whole suite: not asserted, see the notes.)"""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=900, check=True)
    total, fetched, carried, peak_kib = map(int, done.stdout.split())
    print(f"the client peaked at {peak_kib // 1024} MiB")
    assert total == 128 * 1024 * 1024 * sum(range(16))
    assert fetched == 0 and carried < 1_000_000
