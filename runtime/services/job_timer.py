"""What a scheduler's messages tell that its counters do not: when each task launched and each job
ended, relative to the job's arrival, and which node monitor is behind which connection. The
`JobTimer` follows the messages a scheduler's logic takes and sends (an instrument of the logic's
steps, instruments.observed, in the scheduler's own thread) and reports to its observers once per batch: the Prometheus
histograms (metrics.py) and the dashboard (dashboard/activity.py) share it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..wire.messages import JobAccepted, OutcomeToClient, RegisterNodeMonitor, TaskToNode
from .instruments import Instruments


class SchedulerObserver:
    """What a scheduler's traffic tells beyond its counters, as events; override the ones you need.
    Called in the scheduler's own thread, from inside its logic, once per batch of messages: keep each
    call short. One that raises is removed and logged (instruments.py); the scheduler goes on."""

    def traffic(self, delays: list[float], responses: list[float], ok: int, failed: int) -> None:
        """In one batch: the scheduling delays of the tasks launched (seconds from their job's arrival),
        the response times of the jobs whose last outcome was sent (from arrival to that outcome), and
        the outcomes sent: `ok` tasks returned a value, `failed` did not."""

    def node_registered(self, node_id: str, peer: Hashable) -> None:
        """A node monitor registered over `peer` (a Connection in the service: `peer.peer_name`)."""

    def node_lost(self, node_id: str) -> None:
        """The node monitor's link ended and no newer link of the same id is registered."""


class JobTimer:
    """Follows jobs through the scheduler's messages and tells its observers (SchedulerObserver) when
    tasks launch, outcomes are sent and jobs end, with their delays; and which node monitor is which
    peer. Nothing in SchedulerLogic.stats says when: this is the one message-driven part."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.observers: Instruments = Instruments()  # SchedulerObservers
        self._arrived: dict[int, float] = {}  # job id -> arrival time
        self._job_of: dict[tuple[Hashable, int], int] = {}  # (client, ref) -> job id
        self.node_ids: dict[Hashable, str] = {}  # node monitor peer -> its id
        self._peer_of: dict[str, Hashable] = {}  # node id -> its newest peer

    def step(self, event: str, args: tuple, out: list) -> None:
        """The instrument hook (instruments.observed): the logic took step `event` with `args` and
        returned `out`. Any step not named here (on_timer, or one added later) is followed by its
        messages."""
        if event == "on_node_messages":
            peer = args[0]
            if peer not in self.node_ids:  # the hot path: the registered ones just send traffic
                self.registration(peer, args[1])
            self.outgoing(out)
        elif event == "on_client_messages":
            self.client_messages(args[0], out)
        elif event == "on_node_lost":
            self.node_lost(args[0], out)
        elif event == "on_client_lost":
            self.client_lost(args[0], out)
        elif out:
            self.outgoing(out)

    def client_messages(self, client: Hashable, out: list) -> None:
        now = self.clock()
        for peer, msg in out:
            if type(msg) is JobAccepted and peer == client:
                self._arrived[msg.job_id] = now
                self._job_of[(client, msg.ref)] = msg.job_id
        self.outgoing(out, now)

    def registration(self, peer: Hashable, msgs: list) -> None:
        """Note which node monitor `peer` is if `msgs` (from a peer not registered yet) registers it."""
        for msg in msgs:
            if type(msg) is RegisterNodeMonitor:
                self.node_ids[peer] = msg.node_id
                self._peer_of[msg.node_id] = peer
                self.observers.call("node_registered", msg.node_id, peer)
                return

    def node_lost(self, peer: Hashable, out: list) -> None:
        node_id = self.node_ids.pop(peer, None)
        if node_id is not None and self._peer_of.get(node_id) is peer:  # not replaced by a newer link
            del self._peer_of[node_id]
            self.observers.call("node_lost", node_id)
        self.outgoing(out)

    def client_lost(self, client: Hashable, out: list) -> None:
        self.outgoing(out)
        for key in [k for k in self._job_of if k[0] == client]:  # its jobs are dropped unfinished
            self._arrived.pop(self._job_of.pop(key), None)

    def outgoing(self, out: list, now: float | None = None) -> None:
        """Report the launches and outcomes among the messages `out` to the observers, at once (with one clock
        read, taken before the messages are looked at: a hot path, once per batch)."""
        if now is None:
            now = self.clock()
        arrived = self._arrived
        delays = responses = None  # of the launched tasks (from their jobs' arrival), of the jobs finished
        ok = failed = 0
        for peer, msg in out:
            kind = type(msg)
            if kind is TaskToNode:
                when = arrived.get(msg.job_id)
                if when is not None:
                    if delays is None:
                        delays = [now - when]
                    else:
                        delays.append(now - when)
            elif kind is OutcomeToClient:
                if msg.outcome.ok:
                    ok += 1
                else:
                    failed += 1
                if msg.last:
                    job_id = self._job_of.pop((peer, msg.ref), None)
                    when = None if job_id is None else arrived.pop(job_id, None)
                    if when is not None:
                        if responses is None:
                            responses = [now - when]
                        else:
                            responses.append(now - when)
        if delays is not None or ok or failed:
            self.observers.call("traffic", _NONE if delays is None else delays, responses or _NONE, ok, failed)


_NONE: list[float] = []  # shared, never changed
