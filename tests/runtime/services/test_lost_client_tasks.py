"""A lost client's running tasks give their slots back (scheduler_logic.py, `client_grace`), with
real processes: a client SIGKILLed while its long tasks run, and the next client's tasks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.services.processes import child_env
from sparrow_runtime.services.scheduler_logic import DEFAULT_CLIENT_GRACE

# A client that runs 4 tasks of 60 s, says so once all 4 run, and waits to be killed.
DOOMED_CLIENT = """
import sys, time, trio
from functools import partial
from sparrow_runtime import Client

async def main():
    async with Client([sys.argv[1]]) as client:
        await client.submit_job([partial(time.sleep, 60)] * 4, probe_ratio=1.0)
        with trio.fail_after(30):
            while sum(n.busy for n in (await client.status()).nodes) < 4:
                await trio.sleep(0.05)
        print("running", flush=True)
        await trio.sleep(120)

trio.run(main)
"""


@pytest.mark.slow
def test_a_killed_clients_running_tasks_free_their_slots_within_the_grace(tmp_path):
    """4 slots busy with a client's 60 s tasks; the client is SIGKILLed: within the grace (2 s) plus
    1 s its tasks are stopped and the slots have taken the next client's 4 tasks, which run once each."""
    script = tmp_path / "doomed_client.py"
    script.write_text(DOOMED_CLIENT)
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=4, dashboard=False
    ) as cluster:
        doomed = subprocess.Popen(
            [sys.executable, str(script), cluster.schedulers[0]],
            stdout=subprocess.PIPE,
            env=child_env({"SPARROW_SECRET": cluster.secret}),
        )
        try:
            assert doomed.stdout.readline() == b"running\n"  # bounded by the script's own 30 s
        finally:
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait()
            doomed.stdout.close()
        killed = time.monotonic()

        async def next_client():
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                job = await client.submit_job([partial(int, i) for i in range(4)], probe_ratio=1.0)
                with trio.fail_after(DEFAULT_CLIENT_GRACE + 10):  # generous bound; the figure is asserted below
                    while True:  # until the scheduler has launched all 4 on the freed slots
                        status = await client.status()
                        if all(j.launched == 4 for j in status.jobs if j.job_id == job.job_id):
                            break
                        await trio.sleep(0.02)
                    served = time.monotonic()
                    outcomes = await job.outcomes()
                done = time.monotonic()
                counters = (await client.status()).counters
            return outcomes, counters, served, done

        outcomes, counters, served, done = trio.run(next_client)
    assert [(o.ok, o.value, o.attempts) for o in outcomes] == [(True, i, 1) for i in range(4)]
    assert counters.get("orphans_stopped") == 4
    # the slots take the next client's tasks within the grace plus 1 s; the tasks then wait for the
    # worker processes that replace the killed ones (a Python start-up each)
    assert served - killed < DEFAULT_CLIENT_GRACE + 1.0, (served - killed, done - killed)
