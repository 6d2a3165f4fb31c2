"""The paper's cluster experiment on the runtime (`sparrow experiment cluster`): TPC-H-like queries
(queries.py) run on a local cluster by several clients through several schedulers (run.py), and
reported against the ideal scheduler and the simulator's prediction (report.py, document.py)."""
