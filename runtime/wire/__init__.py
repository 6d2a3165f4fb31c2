"""The wire: the messages and their limits, framing, connections, the authenticated handshake,
and how tasks and outcomes are encoded (shared by every process of a cluster)."""
