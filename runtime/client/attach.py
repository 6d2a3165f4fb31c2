"""The SparrowExecutor a front end (Dask's scheduler function, joblib's backend) runs on: one it is given, or
one it makes for a LocalCluster, scheduler addresses or the `sparrow local` of this host."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..services.local_cluster import LocalCluster
from .executor import SparrowExecutor

CREDENTIALS = frozenset(("secret", "secret_file", "tls"))  # the executor options that say how to get in


def executor_for(
    cluster: SparrowExecutor | LocalCluster | Sequence[str] | str | None, options: dict[str, Any]
) -> tuple[SparrowExecutor, bool]:
    """The executor to run on, and whether the caller made it (and so shuts it down). `cluster`: a
    SparrowExecutor (used as it is: `options` must be empty), a LocalCluster (entered with its credentials,
    its TLS client or its secret, unless `options` name others), scheduler addresses, or None for the
    `sparrow local` of this host; `options` are SparrowExecutor's keyword arguments.

    Error handling: TypeError for options given with an executor; ConnectionLost as SparrowExecutor."""
    if isinstance(cluster, SparrowExecutor):
        if options:
            raise TypeError(f"executor options {sorted(options)} need a cluster, not an executor")
        return cluster, False
    if isinstance(cluster, LocalCluster):
        if not options.keys() & CREDENTIALS:
            options = {**options, **cluster.credentials}
        return SparrowExecutor(cluster.schedulers, **options), True
    return SparrowExecutor(cluster, **options), True
