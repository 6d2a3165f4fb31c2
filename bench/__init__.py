"""The asv benchmark suite of sparrow-core (see asv.conf.json and docs/benchmarks.md): bench_<area>.py
modules of benchmark classes, and what they import: common.py of seeded cached workloads, measure.py of
the kernel-vs-baseline cases they share with `python -m benchtools.report` and tests/core/test_bench_*.py,
open_loop.py of the runtime's open-loop load run, submit_loop.py of the submit-loop figure, traffic.py of
the bytes through a client and its schedulers. The commands around asv and the other benchmark scripts
are in benchtools/."""
