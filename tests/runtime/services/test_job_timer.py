"""The JobTimer (job_timer.py), fed by MeteredSchedulerLogic: the delays and response times it
measures on the logic's clock, the outcomes it counts, the node monitors it tells registered or lost,
and the jobs it forgets."""

from __future__ import annotations

from sparrow_runtime.services.job_timer import SchedulerObserver
from sparrow_runtime.services.metrics import MeteredSchedulerLogic
from sparrow_runtime.wire.messages import GetTask, Outcome, OutcomeToScheduler, RegisterNodeMonitor, SubmitJob

from ..manual_clock import ManualClock


class Recorder(SchedulerObserver):
    def __init__(self) -> None:
        self.delays: list[float] = []
        self.responses: list[float] = []
        self.ok = self.failed = 0
        self.events: list[tuple[str, str]] = []

    def traffic(self, delays, responses, ok, failed) -> None:
        self.delays += delays
        self.responses += responses
        self.ok += ok
        self.failed += failed

    def node_registered(self, node_id, peer) -> None:
        self.events.append(("registered", node_id))

    def node_lost(self, node_id) -> None:
        self.events.append(("lost", node_id))


def test_job_timer_measures_delays_and_responses_on_the_logic_clock():
    """Launch 0.5 s and 1.5 s after arrival, last outcome at 4 s: those are the delays and response."""
    clock = ManualClock()
    logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, clock=clock, bind_idle=False)
    seen = Recorder()
    logic.timer.observers.append(seen)
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 2)])
    logic.on_client_messages("c", [SubmitJob(7, [b"x", b"y"])])
    job_id = next(iter(logic.jobs))
    clock.now = 100.5
    logic.on_node_messages("nm", [GetTask(job_id)])
    clock.now = 101.5
    logic.on_node_messages("nm", [GetTask(job_id), GetTask(job_id)])  # the third is answered NoTask
    clock.now = 103.0
    logic.on_node_messages("nm", [OutcomeToScheduler(job_id, 0, Outcome(False, b"", "boom"))])
    assert (seen.responses, seen.failed) == ([], 1)
    clock.now = 104.0
    logic.on_node_messages("nm", [OutcomeToScheduler(job_id, 1, Outcome(True, b"", ""))])
    assert (seen.delays, seen.responses, seen.ok, seen.failed) == ([0.5, 1.5], [4.0], 1, 1)
    assert logic.metrics is None  # no registry: no Prometheus metrics, the timer still runs


def test_job_timer_forgets_the_jobs_of_a_lost_client():
    logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, bind_idle=False)
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 1)])
    logic.on_client_messages("c", [SubmitJob(1, [b"x"]), SubmitJob(2, [b"y"])])
    logic.on_client_lost("c")
    assert logic.timer._arrived == {} and logic.timer._job_of == {}


def test_a_node_monitor_is_lost_once_and_not_when_a_newer_link_replaced_it():
    logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, bind_idle=False)
    seen = Recorder()
    logic.timer.observers.append(seen)
    logic.on_node_messages("old", [RegisterNodeMonitor("a", 1)])
    logic.on_node_messages("new", [RegisterNodeMonitor("a", 1)])  # it reconnected: "old" is stale
    logic.on_node_lost("old")
    assert seen.events == [("registered", "a"), ("registered", "a")]
    logic.on_node_lost("new")
    logic.on_node_lost("new")
    assert seen.events[2:] == [("lost", "a")]


class Broken(SchedulerObserver):
    def traffic(self, delays, responses, ok, failed) -> None:
        raise RuntimeError("a dashboard bug")


def test_an_observer_that_raises_is_removed_and_logged_and_the_scheduler_goes_on(caplog):
    """As trio's instruments: the broken observer is dropped with an ERROR naming it, the next one
    still sees the same batch, and the logic's messages are unaffected (no connection is ended)."""
    logic = MeteredSchedulerLogic(None, scheduler_id="s", seed=1, bind_idle=False)
    broken, seen = Broken(), Recorder()
    logic.timer.observers.extend([broken, seen])
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 1)])
    logic.on_client_messages("c", [SubmitJob(7, [b"x"])])
    job_id = next(iter(logic.jobs))
    out = logic.on_node_messages("nm", [GetTask(job_id)])
    assert type(out[0][1]).__name__ == "TaskToNode"
    assert list(logic.timer.observers) == [seen] and len(seen.delays) == 1
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "raised in traffic and was removed" in record.getMessage() and "a dashboard bug" in record.exc_text
    logic.on_node_messages("nm", [OutcomeToScheduler(job_id, 0, Outcome(True, b""))])
    assert seen.ok == 1
