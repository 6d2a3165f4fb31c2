"""benchtools.failover, run for one short round per fault: it measures, and it loses no task."""

from __future__ import annotations

import trio

from benchtools import failover


def test_one_round_of_each_fault_loses_nothing_and_measures_each_phase(monkeypatch):
    monkeypatch.setattr(failover, "WARM", 0.5)
    monkeypatch.setattr(failover, "AFTER", 0.5)
    monkeypatch.setenv("SPARROW_SCHEDULER_TIMEOUT", "0.2")
    monkeypatch.setenv("SPARROW_HEARTBEAT_INTERVAL", "0.05")
    for fault in ("SIGKILL", "SIGSTOP"):
        result = trio.run(failover.one_round, fault, 0.2)
        assert result.lost == 0 and result.relaunched > 0
        assert 0 <= result.failover < 5 and result.relaunch is not None and result.relaunch >= 0
        assert 0 <= result.detection < 5
