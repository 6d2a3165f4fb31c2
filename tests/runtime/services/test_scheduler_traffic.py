"""SchedulerLogic's traffic counters (sans-I/O): the bytes of task payloads and outcomes it takes from
clients and node monitors and sends on, exactly, whatever the path (launched, too large, stale)."""

from sparrow_runtime.wire.messages import GetTask, Outcome, OutcomeToClient, OutcomeToScheduler, SubmitJob, TaskToNode

from .test_scheduler_logic import cluster, of_type, reservations


def test_payloads_and_outcomes_are_counted_in_and_out_once_each():
    """Tasks of 10 and 20 bytes, outcomes of 7 + 3 bytes: in from the client 30, out to node monitors
    30, in from node monitors 10 + 10, out to the client 20; a stale outcome is not counted."""
    logic = cluster(2)
    held = reservations(logic.on_client_messages("c", [SubmitJob(1, [b"a" * 10, b"b" * 20])]))
    assert logic.stats["bytes_from_clients"] == 30
    ran = {}
    for peer, n in held.items():
        for _ in range(n):
            for _, msg in of_type(logic.on_node_messages(peer, [GetTask(1)]), TaskToNode):
                ran[msg.task] = peer
    assert logic.stats["bytes_to_node_monitors"] == 30
    for task, peer in ran.items():
        logic.on_node_messages(peer, [OutcomeToScheduler(1, task, Outcome(True, b"x" * 7, "err"))])
    logic.on_node_messages(peer, [OutcomeToScheduler(1, 0, Outcome(True, b"late" * 100))])  # stale: job done
    assert logic.stats["bytes_from_node_monitors"] == 20 and logic.stats["bytes_to_clients"] == 20


def test_an_outcome_over_the_clients_frame_limit_counts_what_is_sent_instead():
    """An outcome too large for the client's link: the failure text goes instead, and that is counted."""
    logic = cluster(1)
    logic.frame_limits["c"] = 4096
    logic.on_client_messages("c", [SubmitJob(1, [b"t"])])
    logic.on_node_messages("nm0", [GetTask(1)])
    out = logic.on_node_messages("nm0", [OutcomeToScheduler(1, 0, Outcome(True, b"v" * 10_000))])
    [(_, sent)] = of_type(out, OutcomeToClient)
    assert logic.stats["bytes_from_node_monitors"] == 10_000
    assert logic.stats["bytes_to_clients"] == len(sent.outcome.error) > 0 and sent.outcome.payload == b""
