"""The cluster experiment's arithmetic (sparrow_experiments.report and document): the queueing
delay split, a run's figures against its replays, and the median and range over runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparrow_experiments.document import Setup, render, verdicts
from sparrow_experiments.machine import Machine, MachineNote
from sparrow_experiments.queries import Query, Stage
from sparrow_experiments.replay import Hops
from sparrow_experiments.report import (
    RunFigures,
    Spread,
    queueing_split,
    replay_trace,
    run_figures,
    summarise,
)
from sparrow_experiments.run import QueryRecord
from sparrow_runtime.demo.workload import JobRecord


def test_queueing_split_charges_the_wait_for_the_workers_previous_task_to_the_slot():
    ready = np.array([1.0, 0.0, 0.0, 5.0])
    start = np.array([1.5, 0.1, 2.0, 5.2])
    end = np.array([2.5, 1.9, 3.0, 6.0])
    worker = np.array([8, 7, 7, 7])
    network, slot = queueing_split(ready, start, end, worker)
    # worker 8 was idle: all network; worker 7's second task waited until 1.9; its third found it idle
    assert slot.tolist() == pytest.approx([0.0, 0.0, 1.9, 0.0])
    assert network.tolist() == pytest.approx([0.5, 0.1, 0.1, 0.2])
    assert (network + slot).tolist() == pytest.approx((start - ready).tolist())


def test_a_spread_is_the_median_lowest_and_highest():
    assert Spread.of([3.0, 1.0, 2.0, 10.0]) == Spread(2.5, 1.0, 10.0)
    with pytest.raises(ValueError):
        Spread.of([])


def _stage(submitted, starts, ends, workers, finished) -> JobRecord:
    return JobRecord(
        submitted,
        len(starts),
        np.array(starts, dtype=float),
        np.array(ends, dtype=float),
        finished=finished,
        n_done=len(starts),
        workers=np.array(workers),
    )


def _two_queries() -> list[QueryRecord]:
    """Two queries of a scan (2 tasks of 100 ms) then a 1-task aggregate (50 ms), on one node monitor of
    2 slots (workers 1 and 2); the second query arrives while the first one's scan runs."""
    shape = (Stage("scan", np.array([0.1, 0.1]), ()), Stage("aggregate", np.array([0.05]), (0,)))
    first = QueryRecord(
        Query(0.0, "q6", shape),
        arrived=10.0,
        stages=[
            _stage(10.000, [10.002, 10.003], [10.102, 10.103], [1, 2], finished=10.1036),
            _stage(10.1040, [10.1060], [10.1560], [1], finished=10.1566),
        ],
        finished=10.1566,
    )
    second = QueryRecord(
        Query(0.05, "q6", shape),
        arrived=10.050,
        stages=[
            _stage(10.050, [10.1035, 10.1560 + 0.0005], [10.2035, 10.2565], [2, 1], finished=10.2571),
            _stage(10.2575, [10.2600], [10.3100], [2], finished=10.3106),
        ],
        finished=10.3106,
    )
    return [first, second]


def test_the_trace_puts_every_stage_at_its_querys_arrival_waiting_for_its_parents():
    jobs, numbers = replay_trace(_two_queries())
    assert [job.arrival for job in jobs] == pytest.approx([0.0, 0.0, 0.05, 0.05])
    assert [job.parents for job in jobs] == [(), (0,), (), (2,)]
    assert numbers == [[0, 1], [2, 3]]
    assert jobs[0].durations.tolist() == pytest.approx([0.1, 0.1])


def test_run_figures_measure_each_query_and_replay_it_on_the_ideal_and_the_model():
    figures = run_figures(_two_queries(), node_monitors=1, slots=2, schedulers=1)
    assert figures.response.tolist() == pytest.approx([0.1566, 0.2606])
    # the ideal is one FIFO queue of released tasks: query 2's scan (queued at 0.05) takes both slots at
    # 0.1, before query 1's aggregate (released at 0.1); both aggregates run 0.2-0.25
    assert figures.ideal_response.tolist() == pytest.approx([0.25, 0.25 - 0.05])
    assert figures.simulated_response.size == 2 * 5  # every seed of the model, pooled
    assert figures.tasks == 6 and figures.queries == 2 and figures.failed == 0
    assert figures.delay.tolist() == pytest.approx([0.002, 0.003, 0.002, 0.0535, 0.1065, 0.0025])
    assert (figures.delay_network + figures.delay_slot).tolist() == pytest.approx(figures.delay.tolist())
    # the second query's scan waited for workers 2 and 1 to end their tasks (10.103, then the aggregate's 10.156)
    assert figures.delay_slot.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.053, 0.106, 0.0])
    assert figures.mean_response_over_ideal == pytest.approx((0.1566 + 0.2606) / (0.25 + 0.2))
    assert figures.hops.result == pytest.approx(np.mean([0.0006, 0.0006, 0.0006, 0.0006]))


def test_a_run_with_an_unfinished_query_is_refused():
    records = _two_queries()
    records[1].finished = math.nan
    with pytest.raises(ValueError, match="did not finish"):
        run_figures(records, node_monitors=1, slots=2, schedulers=1)


def _figures(response: list[float], ideal: list[float], simulated: list[float]) -> RunFigures:
    empty = np.zeros(1)
    return RunFigures(
        queries=len(response),
        tasks=1,
        failed=0,
        wall=1.0,
        busy=0.5,
        slots=1,
        response=np.array(response),
        ideal_response=np.array(ideal),
        simulated_response=np.array(simulated),
        delay=np.array([0.004]),
        delay_network=np.array([0.001]),
        delay_slot=np.array([0.003]),
        ideal_delay=empty,
        hops=Hops(chain_gap=0.0005, idle_start=0.002, result=0.0005),
    )


def test_the_verdicts_follow_the_numbers_of_every_run():
    close = [_figures([1.0, 2.0], [1.0, 1.9], [1.0, 2.0]), _figures([1.1, 2.0], [1.0, 1.9], [1.0, 2.1])]
    mean = summarise(close, lambda r: r.mean_response_over_ideal)
    assert (mean.median, mean.low, mean.high) == pytest.approx(((1.5 + 1.55) / 2.9, 1.5 / 1.45, 1.55 / 1.45))
    lines = verdicts(close)
    assert lines[0].startswith("Mean query response time: 1.05 (1.03-1.07) x the ideal's (within the paper's 12%")
    assert "Median queueing delay per task: 4.0 (4.0-4.0) ms" in lines[1]
    assert "The network and late-binding part at the median task: 1.0 (1.0-1.0) ms" in lines[1]
    # the model's worst: run 2 at p95, (1.0 + 0.95 x 1.1) / (1.1 + 0.95 x 0.9) = 1.046
    assert lines[2].endswith("met.") and "within 5%" in lines[2]
    far = [_figures([2.0, 4.0], [1.0, 2.0], [1.0, 2.0])]
    assert "not within" in verdicts(far)[0] and verdicts(far)[2].endswith("not met.")


def test_the_page_quotes_the_command_the_machine_and_every_table():
    machine = Machine(2, "Test CPU 9000", virtual=True)
    setup = Setup("sparrow experiment cluster --runs 2", 4, 8, 4, 0.8, 40.0, 1.0, "process", (0, 1), machine)
    notes = [MachineNote(1.0, 2.5, 3.25, 2), MachineNote(2.5, 2.0, None, 2)]
    page = render([_figures([1.0], [1.0], [1.0])] * 2, notes, setup, "cluster.png")
    assert "sparrow experiment cluster --runs 2" in page
    assert "node monitors, their worker processes) shares 2 CPUs (Test CPU 9000) of a virtual machine," in page
    # each run's offered load: its task time (busy 0.5 s) over the arrival period's slot time (40 s x 1 slot)
    assert "- run 1: offered load 1%, 1 queries; load average 1.00 -> 2.50 on 2 CPUs, steal 3.2%" in page
    assert "- run 2: offered load 1%, 1 queries; load average 2.50 -> 2.00 on 2 CPUs, steal unknown" in page
    for heading in (
        "| query response | sparrow | ideal |",
        "| queueing delay per task |",
        "| simulated / sparrow |",
        "| measured in the run (mean) | ms |",
        "![query response time CDFs",
    ):
        assert heading in page
