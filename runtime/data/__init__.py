"""The data plane: values kept at the node monitor that made them, and their transfer peer to peer.

`store.py` (the value store: bytes held, a limit, owners and sessions), `transfer.py` (chunking and
reassembly with their checks), `dependent.py` (a dependent task whose inputs travel as references) are
sans-I/O; `server.py` (a node monitor's data listener) and `links.py` (fetching and releasing values over
authenticated links, for clients and node monitors alike) are their trio shells (docs/runtime.md,
"Values stay where they were made").
"""
