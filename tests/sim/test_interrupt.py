"""Ctrl-C stops a long simulation promptly (the C++ loop polls Python's signal handlers every 65,536
events, a few milliseconds), not when the run would have ended (over 30 s here)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

LONG_RUN = """
import sparrow_core.sim as sim
config = sim.SimConfig(policy="sparrow", n_workers=10_000, slots=4, tasks_per_job=100, load=0.8,
                       n_jobs=2_000_000, keep_task_waits=False, seed=1)  # about a minute of work
print("started", flush=True)
try:
    sim.simulate(config)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise SystemExit(130)
print("finished", flush=True)
"""


def test_ctrl_c_interrupts_a_running_simulation():
    with subprocess.Popen([sys.executable, "-c", LONG_RUN], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout.readline() == "started\n"
            time.sleep(0.5)  # inside the C++ loop by now
            child.send_signal(signal.SIGINT)
            sent = time.monotonic()
            assert child.wait(timeout=30) == 130
            assert time.monotonic() - sent < 10  # generous for a loaded machine; the run takes over 30 s
            assert child.stdout.read() == "interrupted\n"
        finally:
            child.kill()
