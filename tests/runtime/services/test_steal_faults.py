"""Work stealing with real processes: a node monitor SIGKILLed while its peers steal from it, or while it runs
and holds stolen reservations, loses no task and runs none twice: every task ends with exactly one outcome,
and no job hangs; also with the steal logs on (SPARROW_PLACEMENT_LOG, steal_log.py), which stay readable, the
killed node monitor's included."""

import os
import signal
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, Constraint, LocalCluster, NodeMonitorConfig, TaskFailed
from sparrow_runtime.services.placement_log import ENVIRONMENT
from sparrow_runtime.services.steal_log import read_steal_logs


def _nap(seconds):
    time.sleep(seconds)
    return os.getpid()


@pytest.mark.parametrize("logged", [False, True], ids=["unlogged", "logged"])
@pytest.mark.parametrize("doomed", ["victim", "thief"])
def test_a_node_monitor_sigkilled_mid_steal_loses_no_task(doomed, logged, monkeypatch, tmp_path):
    """nm-0 runs a 3 s task (constrained there) while 30 one-task jobs of 0.1 s arrive (one probe each);
    once its peers have stolen from it, the victim (nm-0) or a thief (nm-1) is SIGKILLed. Every task still
    ends exactly once: the short ones all run (the client's default retries cover a task that was running
    where the kill struck), the long one fails only if its node monitor died; each value is the pid of a
    node monitor, and the scheduler's outcomes equal its tasks. Logged: every node monitor's steal log reads
    back, and the thieves logged the attempts that stole."""
    if logged:
        monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    with LocalCluster(
        node_monitor=NodeMonitorConfig(executor="thread", steal=True), node_monitors=3, slots=1, dashboard=False
    ) as cluster:
        pids = dict(zip(cluster.node_ids, cluster.node_monitor_pids, strict=True))
        killed = pids["nm-0" if doomed == "victim" else "nm-1"]

        async def main():
            async with Client(cluster.schedulers, secret=cluster.secret) as client:
                long_job = await client.submit_job([partial(_nap, 3.0)], constraints=Constraint(("nm-0",)))
                await trio.sleep(0.3)
                jobs = [await client.submit_job([partial(_nap, 0.1)], probe_ratio=1.0) for _ in range(30)]
                with trio.fail_after(10):
                    while (await client.status()).counters.get("get_task_stolen", 0) < 2:
                        await trio.sleep(0.02)
                os.kill(killed, signal.SIGKILL)
                with trio.fail_after(40):
                    shorts = [await job.outcomes() for job in jobs]
                    [long] = await long_job.outcomes()
                    counters = (await client.status()).counters
            return shorts, long, counters

        shorts, long, counters = trio.run(main)
    assert all(len(outcomes) == 1 for outcomes in shorts)
    assert all(o.ok and o.value in pids.values() for outcomes in shorts for o in outcomes)
    if doomed == "victim":
        assert not long.ok and isinstance(long.exception, TaskFailed)  # its node monitor is gone
    else:
        assert long.ok and long.value == pids["nm-0"]
    assert counters["outcomes"] == counters["tasks"] >= 31  # retries are tasks too: each ended once
    if logged:
        logs = read_steal_logs(tmp_path)
        assert sorted(log.node for log in logs) == sorted(pids)
        assert sum(a.took for log in logs for a in log.attempts) >= 2
