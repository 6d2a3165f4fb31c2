"""The asv benchmark suite of sparrow-core (see asv.conf.json): bench_<area>.py modules of
benchmark classes, common.py of seeded cached workloads, measure.py of the kernel-vs-baseline
cases they share with `python -m bench.report` and tests/core/test_bench_*.py."""
