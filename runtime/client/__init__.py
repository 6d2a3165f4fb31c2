"""The client: the async Client and its jobs, SparrowExecutor, dependencies between tasks, and a
local cluster (LocalCluster, and finding the `sparrow local` of this host)."""
