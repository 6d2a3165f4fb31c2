"""The services: the scheduler and the node monitor (each a sans-I/O logic class and a trio shell),
the executors and their worker processes, metrics, and what running a service needs: its ready line,
and LocalCluster to run them as processes on this host."""
