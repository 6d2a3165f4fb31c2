"""The client: the async Client and its jobs, SparrowExecutor, dependencies between tasks, and finding
the `sparrow local` of this host (LocalCluster itself is in services/)."""
