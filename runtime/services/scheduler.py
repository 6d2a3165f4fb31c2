"""The scheduler service: a thin trio shell around SchedulerLogic.

`SchedulerService.handle_stream` authenticates one incoming stream (client or node monitor), feeds
each batch of received messages to the logic and sends the messages it returns with one write per
connection, node monitors before clients (`send_grouped`); a task's outcome may wait up to
`result_delay` to share its client's next write (outcome_batching.py). `serve_scheduler` runs it behind
TCP listeners, and can also dial node monitors given by address.

Error handling: a connection that fails the handshake or breaks the protocol is answered with Error
and closed; the logic then forgets that peer (a node monitor's tasks are re-probed or reported failed,
a client's jobs are cancelled). A node monitor silent for `node_timeout` seconds (a pause of this
process does not count: wire/liveness.py), or a client that does not read its outcomes (over the
connection's unsent limit), is dropped the same way. An exception raised while serving one
connection ends only that connection (guard.py): nothing a peer sends can stop the service.
"""

from __future__ import annotations

import dataclasses
import logging

import trio

from ..wire.address import Address, format_address
from ..wire.connection import Connection
from ..wire.gate import HandshakeGate
from ..wire.guard import contained
from ..wire.handshake import accept_and_serve, keep_connected
from ..wire.liveness import HEARTBEATS_PER_TIMEOUT
from . import placement_log
from .config import SchedulerConfig
from .listen import listener_address, open_listeners, remove_unix_socket
from .outcome_batching import OutcomeBatcher
from .scheduler_logic import SchedulerLogic

logger = logging.getLogger(__name__)

REDIAL_DELAY = 0.5
TIMER_INTERVAL = 0.1  # seconds between checks of the jobs waiting for a node monitor


class SchedulerService:
    """Connections of one scheduler to its clients and node monitors, driving one SchedulerLogic under
    `config` (its link and timeouts). `outcomes.run()` and `run_timers()` must run beside it
    (serve_scheduler starts them): they send held outcomes in time and give up on jobs that waited
    too long for a node monitor."""

    def __init__(self, logic: SchedulerLogic, config: SchedulerConfig) -> None:
        self.logic = logic
        self.config = config
        self.link = config.link.resolved()
        self.outcomes = OutcomeBatcher(config.result_delay)
        self.name = logic.scheduler_id
        self._gate = HandshakeGate()

    async def handle_stream(self, stream: trio.abc.Stream) -> None:
        """Serve one incoming connection (a client or a node monitor) until it ends."""
        await accept_and_serve(
            stream,
            self.serve_peer,
            log=logger,
            gate=self._gate,
            link=self.link,
            role="scheduler",
            node_id=self.name,
            allowed_roles=("client", "node-monitor"),
        )

    async def serve_peer(self, conn: Connection) -> None:
        """Serve an authenticated connection until it ends, then let the logic forget the peer."""
        logic = self.logic
        if conn.peer_role == "client":
            handle, lost, idle = logic.on_client_messages, logic.on_client_lost, self.config.client_timeout
        else:
            handle, lost, idle = logic.on_node_messages, logic.on_node_lost, self.config.node_timeout

        send = self.outcomes.send
        logic.frame_limits[conn] = conn.send_limit  # what this peer's link takes (told at the handshake)
        if conn.peer_role == "client":
            logic.on_client_connected(conn, conn.peer_id)

        def on_messages(msgs: list) -> None:
            send(handle(conn, msgs))

        forgotten = False

        def forget() -> None:
            """Forget the peer once its link ended, before any checkpoint (the link's closing waits for
            its sender): a node monitor that registers again meanwhile must not find the dead link live."""
            nonlocal forgotten
            if not forgotten:
                forgotten = True
                self.outcomes.forget(conn)
                send(lost(conn))

        with contained(logger, f"serving {conn}"):
            try:
                reason = await conn.serve(on_messages, idle_timeout=idle, on_ended=forget)
                logger.info("%s disconnected: %s", conn, reason)
            finally:
                forget()
                await conn.aclose()

    async def run_timers(self) -> None:
        """Every TIMER_INTERVAL: let the logic fail the jobs that waited too long and stop the tasks of
        lost clients (until cancelled). A tick that wakes up later than a node monitor's heartbeat interval
        means this process was paused (liveness.py's rule): the logic is told (SchedulerLogic.on_paused)."""
        paused = self.config.node_timeout / HEARTBEATS_PER_TIMEOUT
        while True:
            asked = trio.current_time() + TIMER_INTERVAL
            await trio.sleep(TIMER_INTERVAL)
            if trio.current_time() - asked > paused:
                self.logic.on_paused()
            if self.logic.timers_due:
                with contained(logger, "failing the jobs that waited too long, stopping lost clients' tasks"):
                    self.outcomes.send(self.logic.on_timer())

    async def keep_dialing(self, target: Address) -> None:
        """Connect to the node monitor at `target` and serve it; redial whenever the link ends."""
        await keep_connected(
            target,
            self.serve_peer,
            link=self.link,
            role="scheduler",
            peer_id=self.name,
            redial_delay=REDIAL_DELAY,
        )


async def serve_scheduler(
    config: SchedulerConfig,
    *,
    logic: SchedulerLogic | None = None,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a scheduler with `config` (config.SchedulerConfig: where it listens, its link, its
    placement settings and timeouts) until cancelled.

    Reports its `(host, port)` with `task_status.started`. Node monitors register by dialing it; the
    ones in `config.node_monitors` are dialed by the scheduler instead, and redialed if lost.
    A task's outcome may wait up to `config.result_delay` seconds to share a write to its client with
    others (a job's last outcome never waits; 0: no waiting; see outcome_batching.py). `logic`
    (optional) is the SchedulerLogic to drive, e.g. to read its `stats` in tests; otherwise one is
    made from the config. With `config.link.tls`, every link is TLS with the cluster CA and peers are
    who their certificates say (a client's jobs run as its certificate's user); else the cluster
    secret authenticates them (the insecure mode, for one trusted host).

    Error handling: ListenError if it cannot listen on `config.host:config.port` (in use, not this
    host's address); ValueError if the config has no secret nor TLS and none is in the environment.
    """
    config = dataclasses.replace(config, link=config.link.resolved())
    service_logic = logic
    listeners = await open_listeners(config.host, config.port)
    address = listener_address(listeners[0])
    if service_logic is None:
        name = config.scheduler_id or f"scheduler@{format_address(address)}"
        service_logic = SchedulerLogic(**config.logic_options(name))
    if service_logic.placements is None:
        service_logic.placements = placement_log.from_environment(service_logic.scheduler_id)
    service = SchedulerService(service_logic, config)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(service.outcomes.run)
            nursery.start_soon(service.run_timers)
            await nursery.start(trio.serve_listeners, service.handle_stream, listeners)
            for target in config.node_monitors:
                nursery.start_soon(service.keep_dialing, target)
            logger.info("scheduler %s listening on %s", service.name, format_address(address))
            task_status.started(address)
    finally:
        remove_unix_socket(address)
        if service_logic.placements is not None:
            service_logic.placements.close()
