"""The asv benchmark suite of sparrow-core (see asv.conf.json and docs/benchmarks.md): bench_<area>.py
modules of benchmark classes, common.py of seeded cached workloads, measure.py of the kernel-vs-baseline
cases they share with `python -m bench.report` and tests/core/test_bench_*.py, open_loop.py of the
runtime's open-loop load run. Commands around asv: history.py (the last N commits), gate.py (HEAD
against a base), dashboard.py (the offline dashboard), on asv_project.py."""
