"""Pipelining depth N in the simulator (policy/pipeline.h, `pipeline_depth`), against a small Python
reference model of the kernel's rule (csrc/sparrow/pipeline.h, which the runtime's node monitor uses too): one
worker of S slots, one scheduler, every message taking D, FIFO queue. Deeper than 1 only while the
median of the worker's last 8 run times is under 5 ms; then up to N asked ahead or bound per slot held,
a slot that takes a reservation asks ahead with it, and at most half of what the worker holds of the
head job is asked ahead. With the gate (`pipeline_gate`) it asks ahead at all, even one deep, only while each
of its last 8 tasks ran under 5 ms (that is also when it is deep), and the half rule bounds every request
asked ahead, one deep too."""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import replace
from itertools import count
from pathlib import Path

import numpy as np
import pytest

from sparrow_core import PIPELINE_RECENT as RECENT
from sparrow_core import PIPELINE_SHORT_TASK as SHORT_TASK
from sparrow_core.sim import SimConfig, simulate

D = 0.0003  # one-way delay


def reference(
    jobs: list[tuple[float, list[float]]], *, slots: int, depth: int, gate: bool = False, probe_ratio: float = 2.0
) -> list[float]:
    """Each job's response on one worker (module docstring): arrival -> Reserve (D) -> GetTask (D) ->
    Reply (D) -> run; when a job's tasks are all launched its leftover reservations are cancelled (D)."""
    events: list = []
    seq = count()

    def at(time: float, *event) -> None:
        heapq.heappush(events, (time, next(seq), event))

    free = slots
    queue: deque[int] = deque()  # job ids, FIFO
    asks: deque[list] = deque()  # requests in flight, oldest first: [job, holds a slot]
    bound: deque[tuple[int, int]] = deque()
    running: dict[tuple[int, int], float] = {}  # (job, task) -> start
    recent: deque[float] = deque(maxlen=RECENT)
    short = deep = False
    launched = [0] * len(jobs)
    unasked = [0] * len(jobs)  # the scheduler's count of each job's reservations not yet asked for
    done = [0] * len(jobs)
    finished = [math.nan] * len(jobs)
    now = 0.0

    def ask(job: int, holds: bool) -> None:
        asks.append([job, holds])
        at(now + D, "get_task", job)

    def ask_ahead() -> None:
        if gate and not short:
            return
        limit = (slots - free) * depth if deep else len(running)
        while queue and sum(not a[1] for a in asks) + len(bound) < limit:
            if deep or gate:
                head = queue[0]
                ahead = sum(1 for a in asks if a[0] == head and not a[1])
                if 2 * (ahead + 1) > queue.count(head) + ahead:
                    break
            ask(queue.popleft(), False)

    def start(job: int, task: int) -> None:
        running[(job, task)] = now
        at(now + jobs[job][1][task], "end", job, task)

    def fill() -> None:
        nonlocal free
        while free > 0 and bound:
            free -= 1
            start(*bound.popleft())
        while free > 0 and any(not a[1] for a in asks):
            next(a for a in asks if not a[1])[1] = True
            free -= 1
        while free > 0 and queue:
            free -= 1
            ask(queue.popleft(), True)

    for j, (arrival, _) in enumerate(jobs):
        at(arrival + D, "reserve", j)
    while events:
        now, _, event = heapq.heappop(events)
        kind, job = event[0], event[1]
        if kind == "reserve":
            n = math.ceil(probe_ratio * len(jobs[job][1]))
            unasked[job] = n
            queue.extend([job] * n)
            fill()
        elif kind == "get_task":  # the scheduler
            unasked[job] -= 1
            task = launched[job] if launched[job] < len(jobs[job][1]) else -1
            at(now + D, "reply", job, task)  # the answer first, then the cancel (the two arrive together)
            if task >= 0:
                launched[job] += 1
                if launched[job] == len(jobs[job][1]) and unasked[job] > 0:
                    at(now + D, "cancel", job)
        elif kind == "reply":
            asked_job, holds = asks.popleft()
            assert asked_job == job
            task = event[2]
            if holds and task >= 0:
                start(job, task)
            elif holds:
                free += 1
            elif task >= 0:
                bound.append((job, task))
            fill()
        elif kind == "cancel":
            kept = [j for j in queue if j != job]
            queue.clear()
            queue.extend(kept)
        elif kind == "end":
            recent.append(now - running.pop((job, event[2])))
            short = (max(recent) if gate else sorted(recent)[len(recent) // 2]) < SHORT_TASK
            deep = depth > 1 and short
            free += 1
            done[job] += 1
            if done[job] == len(jobs[job][1]):
                finished[job] = now - jobs[job][0]
            fill()
        ask_ahead()
    return finished


def random_jobs(seed: int, n: int, *, short: float) -> list[tuple[float, list[float]]]:
    """n jobs of 1-6 tasks arriving about one mean task apart per slot; a `short` fraction of the tasks are
    0.2-2 ms, the others 6-12 ms (so the median crosses 5 ms as the mix goes)."""
    rng = np.random.default_rng(seed)
    arrival, jobs = 0.0, []
    for _ in range(n):
        m = int(rng.integers(1, 7))
        durations = np.where(rng.random(m) < short, rng.uniform(0.0002, 0.002, m), rng.uniform(0.006, 0.012, m))
        jobs.append((round(arrival, 9), [round(x, 9) for x in durations.tolist()]))  # as the trace holds them
        arrival += float(rng.exponential(0.004))
    return jobs


def trace_of(jobs: list[tuple[float, list[float]]], path: Path) -> Path:
    path.write_text("".join(f"{a:.9f} {len(d)} {' '.join(f'{x:.9f}' for x in d)}\n" for a, d in jobs))
    return path


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 4, 16])
@pytest.mark.parametrize(("slots", "short", "seed"), [(1, 0.9, 1), (2, 0.7, 2), (3, 0.5, 3), (2, 0.95, 4)])
def test_the_depth_rule_matches_the_reference_model(
    tmp_path: Path, depth: int, gate: bool, slots: int, short: float, seed: int
):
    """150 jobs on one worker of 1-3 slots, tasks short and long mixed: every job's response equals the
    reference model's, at depth 1 (the rule one deep) and deeper (the median, per-slot and half rules), with
    the gate and without."""
    jobs = random_jobs(seed, 150, short=short)
    config = SimConfig(
        policy="sparrow_pipelined",
        n_workers=1,
        slots=slots,
        network_delay=D,
        pipeline_depth=depth,
        pipeline_gate=gate,
        trace=trace_of(jobs, tmp_path / "jobs.txt"),
    )
    result = simulate(config)
    expected = reference(jobs, slots=slots, depth=depth, gate=gate)
    np.testing.assert_allclose(result.job_response, expected, rtol=0, atol=1e-9)
    assert result.counters["get_task"] - result.counters["get_task_empty"] == result.n_tasks


def test_deeper_pipelines_ask_more_ahead_for_short_tasks(tmp_path: Path) -> None:
    """Sub-ms tasks on one 2-slot worker: depth 4 asks more ahead than depth 1 and hides more round trips
    (a lower mean response); with only long tasks (median over 5 ms) depth 4 decides exactly as depth 1."""
    short = trace_of(random_jobs(5, 200, short=1.0), tmp_path / "short.txt")
    long = trace_of(random_jobs(5, 200, short=0.0), tmp_path / "long.txt")
    base = SimConfig(policy="sparrow_pipelined", n_workers=1, slots=2, network_delay=D)
    one, four = (simulate(replace(base, trace=short, pipeline_depth=d)) for d in (1, 4))
    assert four.counters["asked_ahead"] > one.counters["asked_ahead"]
    assert four.job_response.mean() < one.job_response.mean()
    one_long, four_long = (simulate(replace(base, trace=long, pipeline_depth=d)) for d in (1, 4))
    np.testing.assert_array_equal(one_long.job_response, four_long.job_response)


def test_one_reservation_per_job_asks_nothing_ahead_when_deep() -> None:
    """10-task jobs probing 20 of 200 workers (one reservation of a job per worker): the half rule lets a
    deep worker ask none of a job ahead, so depth 4 asks less ahead than depth 1 with sub-ms tasks."""
    config = SimConfig(
        policy="sparrow_pipelined",
        n_workers=200,
        tasks_per_job=10,
        n_jobs=3000,
        load=0.9,
        duration="constant",
        mean_duration=0.0005,
        network_delay=0.00015,
    )
    one, four = simulate(config), simulate(replace(config, pipeline_depth=4))
    assert one.counters["asked_ahead"] > 0
    assert four.counters["asked_ahead"] < one.counters["asked_ahead"] / 10
    assert four.counters["get_task"] - four.counters["get_task_empty"] == four.n_tasks


def test_the_gate_asks_nothing_ahead_behind_long_tasks(tmp_path: Path) -> None:
    """Only 6-12 ms tasks on one 2-slot worker: gated, depth 1 and 16 ask nothing ahead and every job's response
    equals plain late binding's; ungated, depth 1 asks ahead (so the gate is what holds it back)."""
    long = trace_of(random_jobs(6, 200, short=0.0), tmp_path / "long.txt")
    base = SimConfig(policy="sparrow_pipelined", n_workers=1, slots=2, network_delay=D, trace=long)
    plain = simulate(replace(base, policy="sparrow"))
    for depth in (1, 16):
        gated = simulate(replace(base, pipeline_depth=depth, pipeline_gate=True))
        assert gated.counters["asked_ahead"] == 0
        np.testing.assert_array_equal(gated.job_response, plain.job_response)
    assert simulate(base).counters["asked_ahead"] > 0


def test_the_gate_pipelines_short_tasks(tmp_path: Path) -> None:
    """Sub-ms tasks on one 1-slot worker: gated depth 1 asks ahead once the first task ran short here, and
    hides round trips (a lower mean response than plain late binding)."""
    short = trace_of(random_jobs(7, 200, short=1.0), tmp_path / "short.txt")
    base = SimConfig(policy="sparrow_pipelined", n_workers=1, slots=1, network_delay=D, trace=short)
    plain, gated = simulate(replace(base, policy="sparrow")), simulate(replace(base, pipeline_gate=True))
    assert gated.counters["asked_ahead"] > 0
    assert gated.job_response.mean() < plain.job_response.mean()


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (65, ValueError), (2.0, TypeError), (True, TypeError)])
def test_a_bad_pipeline_depth_is_rejected_by_name(value: object, error: type) -> None:
    """A depth outside 1-64 (the runtime's limit) or not an int is refused before the run, naming the field."""
    with pytest.raises(error, match="pipeline_depth"):
        simulate(SimConfig(policy="sparrow_pipelined", n_jobs=10, pipeline_depth=value))  # type: ignore[arg-type]


def test_a_gate_that_is_not_a_bool_is_rejected_by_name() -> None:
    """pipeline_gate=1 is refused before the run, naming the field."""
    with pytest.raises(TypeError, match="pipeline_gate"):
        simulate(SimConfig(policy="sparrow_pipelined", n_jobs=10, pipeline_gate=1))  # type: ignore[arg-type]
