"""The benchmark scripts and tools of sparrow-core, apart from the asv suite (bench/, which they read):
around asv, history.py (the last N commits), gate.py (HEAD against a base), dashboard.py (the offline
dashboard), ab.py (two builds alternated), on asv_project.py; report.py (the kernels against their
baselines); sim_digest.py and sim_speed_ab.py (the simulator's decisions and speed across builds); and
the runtime's one-off measurements (million.py, scheduler_capacity.py, failover.py, soak.py,
floor_gap.py, pipelining*.py). Run each as `python -m benchtools.NAME` from the repository's root."""
