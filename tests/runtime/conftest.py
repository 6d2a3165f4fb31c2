"""Fixtures shared by the runtime tests."""

from __future__ import annotations

from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio
import trio.testing


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time for `trio.run(main, clock=autojump_clock)`: sleeps, timeouts and heartbeats
    jump ahead as soon as every task is blocked, so a test of a 30 s timeout takes no real time."""
    return trio.testing.MockClock(autojump_threshold=0)


@pytest.fixture(scope="module")
def thread_cluster():
    """A LocalCluster of 2 node monitors x 1 slot with thread executors, for the tests of one module."""
    from sparrow_runtime import LocalCluster, NodeMonitorConfig

    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread"), node_monitors=2, slots=1, dashboard=False
    ) as cluster:
        yield cluster


def count_jobs(client) -> list[int]:
    """Record the size of each job (SubmitJob) `client` sends, in a list (returned) that grows as it sends."""
    from sparrow_runtime.wire.messages import SubmitJob

    sizes = []
    send = client._send

    def counted(msgs):
        sizes.extend(len(m.tasks) for m in msgs if type(m) is SubmitJob)
        return send(msgs)

    client._send = counted
    return sizes


class ClusterCerts:
    """A cluster CA in `directory` and the certificates the TLS tests use: a scheduler, two node
    monitors, clients of users alice and bob, an admin, a monitor (prom), and the same names from a
    second CA."""

    def __init__(self, directory) -> None:
        from sparrow_runtime.wire import certs

        self.directory = directory
        certs.init_ca(directory)
        for name, role in (
            ("sched", "scheduler"),
            ("nm0", "node-monitor"),
            ("nm1", "node-monitor"),
            ("alice", "client"),
            ("bob", "client"),
            ("root", "admin"),
            ("prom", "monitor"),
        ):
            certs.issue(directory, name, role)
        self.other = directory / "other-ca"
        certs.init_ca(self.other, name="another CA")
        for name, role in (("sched", "scheduler"), ("alice", "client")):
            certs.issue(self.other, name, role)

    def tls(self, name: str, *, other_ca: bool = False):
        """The TLS credentials of `name` (from the second CA with `other_ca`), trusting its own CA."""
        from sparrow_runtime.wire.tls import TLS

        folder = self.other if other_ca else self.directory
        return TLS(folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem")


@pytest.fixture(scope="session")
def cluster_certs(tmp_path_factory) -> ClusterCerts:
    """A CA and certificates for every role (see ClusterCerts), made once per test session."""
    return ClusterCerts(tmp_path_factory.mktemp("certs"))


@asynccontextmanager
async def tls_services(certs: ClusterCerts, n_nodes: int = 2, slots: int = 1, **link_options):
    """A scheduler and `n_nodes` thread-executor node monitors on loopback, every link on TLS with
    `certs`; yields (address, scheduler logic, node logics)."""
    from sparrow_runtime import LinkConfig, NodeMonitorConfig, SchedulerConfig, serve_node_monitor, serve_scheduler
    from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
    from sparrow_runtime.services.scheduler_logic import SchedulerLogic

    async with trio.open_nursery() as nursery:
        scheduler = SchedulerLogic(seed=3)
        address = await nursery.start(
            partial(
                serve_scheduler,
                SchedulerConfig(link=LinkConfig(tls=certs.tls("sched"), **link_options)),
                logic=scheduler,
            )
        )
        nodes = []
        for i in range(n_nodes):
            logic = NodeMonitorLogic(NodeMonitorConfig(slots=slots))
            nodes.append(logic)
            node = partial(
                serve_node_monitor,
                NodeMonitorConfig(
                    link=LinkConfig(tls=certs.tls(f"nm{i}")), schedulers=[address], node_id=f"nm{i}", executor="thread"
                ),
            )
            await nursery.start(partial(node, logic=logic))
        yield address, scheduler, nodes
        nursery.cancel_scope.cancel()
