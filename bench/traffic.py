"""The bytes that pass through a Sparrow client and its schedulers while some work runs (the figure
"bytes through the client and the scheduler per graph"), from the counters the services keep:

- client: `Client.traffic` (the client logic's counters): task payloads sent, outcomes received, values
  fetched where the client fetches any, and values uploaded (Client.scatter: a graph's own data, which
  DaskScheduler scatters; they leave the client once, and never pass through the scheduler);
- schedulers: the `bytes_*` counters of each scheduler's logic (SchedulerLogic.stats, exported as
  `sparrow_scheduler_bytes_{received,sent}_total` and in `sparrow status --json`): task payloads from
  clients and to node monitors, outcomes from node monitors and to clients. Read with a StatusRequest.

Both count the data (payloads, outcome values and error text), not message headers. Module level imports
the standard library only (bench/ is imported by asv in environments without the package).
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEDULER_KEYS = ("bytes_from_clients", "bytes_to_node_monitors", "bytes_from_node_monitors", "bytes_to_clients")


def scheduler_bytes(schedulers: list[str], credentials: dict) -> int:
    """The bytes through these schedulers so far (received and sent, all of their counters added up)."""
    import trio

    from sparrow_runtime import Client

    async def ask() -> int:
        total = 0
        for address in schedulers:
            async with Client([address], **credentials) as client:
                counters = (await client.status()).counters
            total += sum(counters.get(key, 0) for key in SCHEDULER_KEYS)
        return total

    return trio.run(ask)


def client_bytes(client) -> int:
    """The bytes through a Client so far (sent and received). Read it while no job is in flight."""
    return sum(client.traffic.values())


@dataclass
class Traffic:
    """Bytes through the client and through the schedulers between `start()` and `stop()`."""

    client: object
    schedulers: list[str]
    credentials: dict
    client_bytes: int = 0
    scheduler_bytes: int = 0

    def start(self) -> Traffic:
        self._client0 = client_bytes(self.client)
        self._scheduler0 = scheduler_bytes(self.schedulers, self.credentials)
        return self

    def stop(self) -> Traffic:
        self.client_bytes = client_bytes(self.client) - self._client0
        self.scheduler_bytes = scheduler_bytes(self.schedulers, self.credentials) - self._scheduler0
        return self


def of_cluster(cluster, client) -> Traffic:
    """A Traffic for `client` (a sparrow_runtime Client) on a LocalCluster's schedulers."""
    return Traffic(client, list(cluster.schedulers), dict(cluster.credentials))


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f}"
