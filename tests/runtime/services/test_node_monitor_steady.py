"""Steady pipelining (NodeMonitorLogic(pipeline="steady"), `--pipeline steady`, the default), sans-I/O with a fake
clock: while the node's last 8 run times are steady (just in time's rule), a busy slot asks for its next task at the
running task's start, so an empty answer leaves the whole task to ask again; never behind a task that overran its
prediction, never for a job held once, never while the run times vary. The faults (one outcome per task on a forced
cancel, the scheduler's loss, the node monitor's loss) and the random-books test run for both timings in
test_node_monitor_jit.py."""

from __future__ import annotations

import pytest

from sparrow_core import PIPELINE_JIT_SPREAD as JIT_SPREAD
from sparrow_core import PIPELINE_RECENT as RECENT_TASKS
from sparrow_core import PIPELINE_STEADY_SPREAD as STEADY_SPREAD
from sparrow_runtime.services.node_monitor_logic import NodeMonitorLogic
from sparrow_runtime.wire.messages import EnqueueReservations, GetTask, GiveBack, NoTask, TaskToNode

from .test_node_monitor_jit import OK, RUN, node
from .test_node_monitor_pipelining import of


def running_with_reservations(logic: NodeMonitorLogic, held: int = 8) -> list:
    """Job 1 gets `held` reservations here and its first task runs; the node monitor's output as it starts."""
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, held)])
    return logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])


def test_steady_10_ms_tasks_ask_ahead_at_the_running_tasks_start_and_the_next_starts_at_once() -> None:
    """After 8 tasks of 10 ms: the slot asks for its next task the moment its task starts (the gate alone never
    would: test_node_monitor_jit.py), no timer is left to fire, and the answer waits bound and starts the moment the
    running task ends, which asks for the next at once again."""
    logic = node(mode="steady")
    assert logic.pipeline.steady and logic.pipeline.mode == "steady"
    assert of(running_with_reservations(logic), GetTask) == [GetTask(1)]
    assert logic.stats["asked_ahead"] == 1 and logic.ask_ahead_at() is None
    logic.clock.now += 0.0005
    assert of(logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")]), TaskToNode) == []  # bound, waiting
    logic.clock.now += RUN - 0.0005
    out = logic.on_task_done("s", 1, 0, OK)
    assert of(out, TaskToNode) == [TaskToNode(1, 1, b"")] and of(out, GetTask) == [GetTask(1)]
    assert logic.stats["asked_ahead"] == 2


def test_an_empty_answer_to_a_request_asked_at_the_start_is_asked_again_at_once() -> None:
    """The request asked ahead is answered NoTask (another node monitor got that task): the slot asks again at once,
    with almost the whole running task left for the answer, and that answer is bound as the first would have been."""
    logic = node(mode="steady")
    running_with_reservations(logic)
    logic.clock.now += 0.0005
    assert of(logic.on_scheduler_messages("s", [NoTask(1)]), GetTask) == [GetTask(1)]
    assert logic.free == 0 and logic.ahead == 1
    logic.clock.now += 0.0005
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
    assert len(logic.bound) == 1
    logic.clock.now += RUN - 0.001
    assert of(logic.on_task_done("s", 1, 0, OK), TaskToNode) == [TaskToNode(1, 1, b"")]


@pytest.mark.parametrize(
    "run_times",
    [
        [RUN] * (RECENT_TASKS - 1),  # too few known
        [RUN] * (RECENT_TASKS - 1) + [RUN * STEADY_SPREAD * 1.01],  # one over the spread
        [0.002 * (1 + i) for i in range(RECENT_TASKS)],  # exponential-like: varied (2-16 ms)
    ],
)
def test_varied_or_too_few_run_times_ask_nothing_ahead(run_times: list[float]) -> None:
    logic = node(run_times, mode="steady")
    assert not logic.pipeline.steady
    running_with_reservations(logic)
    for _ in range(30):
        logic.clock.now += 0.001
        logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 4)])
    assert logic.stats["asked_ahead"] == 0


def test_run_times_stretched_by_a_loaded_host_are_steady_within_its_wider_spread() -> None:
    """10 ms tasks measured 11-20 ms at the node (a loaded 2-core host): steady within STEADY_SPREAD (3x), where
    just in time's 1.5x is not, so the slot still asks ahead at the task's start."""
    stretched = [0.011, 0.020, 0.013, 0.018, 0.011, 0.016, 0.012, 0.019]
    assert max(stretched) > JIT_SPREAD * min(stretched) and not node(stretched, mode="jit").pipeline.steady
    logic = node(stretched, mode="steady")
    assert logic.pipeline.steady
    assert of(running_with_reservations(logic), GetTask) == [GetTask(1)] and logic.stats["asked_ahead"] == 1


def test_nothing_is_asked_ahead_behind_a_task_that_overran_its_prediction() -> None:
    """Reservations that come once the running task has run past the longest recent run time are not asked ahead;
    the next task asks at its start."""
    logic = node(mode="steady")
    logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1)])
    logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
    logic.clock.now += RUN * 1.05
    assert of(logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 8)]), GetTask) == []
    logic.on_task_done("s", 1, 0, OK)  # 10.5 ms: still steady; job 2's slot asks, nothing ahead yet
    assert of(logic.on_scheduler_messages("s", [TaskToNode(2, 0, b"")]), GetTask) == [GetTask(2)]
    assert logic.stats["asked_ahead"] == 1


def test_a_job_held_once_is_not_asked_ahead() -> None:
    """The half rule bounds these requests too: a job of which the node holds one reservation is placed by late
    binding (batch sampling on a large cluster); with two held, one is asked ahead."""
    for held, asked in ((1, 0), (2, 1)):
        logic = node(mode="steady")
        logic.on_scheduler_messages("s", [EnqueueReservations(1, "u", 0, 1), EnqueueReservations(2, "u", 0, held)])
        logic.on_scheduler_messages("s", [TaskToNode(1, 0, b"")])
        assert logic.stats["asked_ahead"] == asked, held


def test_a_long_task_after_steady_ones_gives_back_the_task_bound_behind_it_with_give_back() -> None:
    """The risk of asking at the start: a task that runs far longer than the 8 steady ones holds the task bound
    behind it. With give-back, once it has run 3x the longest recent run time (at least 20 ms) that task goes back to
    its scheduler (GiveBack), and nothing more is asked ahead behind it."""
    logic = node(mode="steady", give_back=True)
    running_with_reservations(logic)
    logic.on_scheduler_messages("s", [TaskToNode(1, 1, b"")])
    assert len(logic.bound) == 1 and not logic.pinned
    logic.clock.now += logic.overrun_after()
    assert logic.give_back_at() == pytest.approx(logic.clock.now)
    assert of(logic.on_give_back_timer(), GiveBack) == [GiveBack(1, 1)]
    assert not logic.bound and of(logic.on_scheduler_messages("s", [EnqueueReservations(2, "u", 0, 8)]), GetTask) == []
