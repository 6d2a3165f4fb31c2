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

import logging
from collections.abc import Sequence

import trio

from ..wire.address import Address, format_address, parse_address
from ..wire.auth import load_secret
from ..wire.connection import Connection
from ..wire.framing import DEFAULT_MAX_FRAME, check_max_frame
from ..wire.gate import HandshakeGate
from ..wire.guard import contained
from ..wire.handshake import DEFAULT_HANDSHAKE_TIMEOUT, accept_and_serve, keep_connected
from ..wire.tls import TLS
from . import placement_log
from .listen import listener_address, open_listeners, remove_unix_socket
from .outcome_batching import DEFAULT_RESULT_DELAY, OutcomeBatcher, check_result_delay
from .scheduler_logic import (
    DEFAULT_CLIENT_GRACE,
    DEFAULT_MAX_CLIENT_TASKS,
    DEFAULT_PLACEMENT_TIMEOUT,
    DEFAULT_PROBE_RATIO,
    SchedulerLogic,
)

logger = logging.getLogger(__name__)

DEFAULT_NODE_TIMEOUT = 2.0
DEFAULT_CLIENT_TIMEOUT = 10.0  # a client silent this long is dropped (clients heartbeat, client.py)
REDIAL_DELAY = 0.5
TIMER_INTERVAL = 0.1  # seconds between checks of the jobs waiting for a node monitor


class SchedulerService:
    """Connections of one scheduler to its clients and node monitors, driving one SchedulerLogic.
    `outcomes.run()` and `run_timers()` must run beside it (serve_scheduler starts them): they send
    held outcomes in time and give up on jobs that waited too long for a node monitor."""

    def __init__(
        self,
        logic: SchedulerLogic,
        *,
        secret: bytes | None,
        tls: TLS | None = None,
        node_timeout: float = DEFAULT_NODE_TIMEOUT,
        client_timeout: float = DEFAULT_CLIENT_TIMEOUT,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        result_delay: float = DEFAULT_RESULT_DELAY,
    ) -> None:
        self.logic = logic
        self.outcomes = OutcomeBatcher(result_delay)
        self.name = logic.scheduler_id
        self._secret = secret
        self._tls = tls
        self.node_timeout = node_timeout
        self.client_timeout = client_timeout
        self.handshake_timeout = handshake_timeout
        self.max_frame = check_max_frame(max_frame)
        self._gate = HandshakeGate()

    async def handle_stream(self, stream: trio.abc.Stream) -> None:
        """Serve one incoming connection (a client or a node monitor) until it ends."""
        await accept_and_serve(
            stream,
            self.serve_peer,
            log=logger,
            gate=self._gate,
            secret=self._secret,
            role="scheduler",
            node_id=self.name,
            allowed_roles=("client", "node-monitor"),
            timeout=self.handshake_timeout,
            max_frame=self.max_frame,
            tls=self._tls,
        )

    async def serve_peer(self, conn: Connection) -> None:
        """Serve an authenticated connection until it ends, then let the logic forget the peer."""
        logic = self.logic
        if conn.peer_role == "client":
            handle, lost, idle = logic.on_client_messages, logic.on_client_lost, self.client_timeout
        else:
            handle, lost, idle = logic.on_node_messages, logic.on_node_lost, self.node_timeout

        send = self.outcomes.send
        logic.frame_limits[conn] = conn.send_limit  # what this peer's link takes (told at the handshake)
        if conn.peer_role == "client":
            logic.on_client_connected(conn, conn.peer_id)

        def on_messages(msgs: list) -> None:
            send(handle(conn, msgs))

        with contained(logger, f"serving {conn}"):
            try:
                reason = await conn.serve(on_messages, idle_timeout=idle)
                logger.info("%s disconnected: %s", conn, reason)
            finally:
                await conn.aclose()
                self.outcomes.forget(conn)
                send(lost(conn))

    async def run_timers(self) -> None:
        """Every TIMER_INTERVAL: let the logic fail the jobs that waited too long and stop the tasks of
        lost clients (until cancelled)."""
        while True:
            await trio.sleep(TIMER_INTERVAL)
            if self.logic.timers_due:
                with contained(logger, "failing the jobs that waited too long, stopping lost clients' tasks"):
                    self.outcomes.send(self.logic.on_timer())

    async def keep_dialing(self, target: Address) -> None:
        """Connect to the node monitor at `target` and serve it; redial whenever the link ends."""
        await keep_connected(
            target,
            self.serve_peer,
            secret=self._secret,
            role="scheduler",
            peer_id=self.name,
            timeout=self.handshake_timeout,
            max_frame=self.max_frame,
            redial_delay=REDIAL_DELAY,
            tls=self._tls,
        )


async def serve_scheduler(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    secret: str | bytes | None = None,
    secret_file: str | None = None,
    tls: TLS | None = None,
    node_monitors: Sequence[str | Address] = (),
    scheduler_id: str | None = None,
    probe_ratio: float = DEFAULT_PROBE_RATIO,
    seed: int | None = None,
    placement_timeout: float = DEFAULT_PLACEMENT_TIMEOUT,
    max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS,
    client_grace: float = DEFAULT_CLIENT_GRACE,
    node_timeout: float = DEFAULT_NODE_TIMEOUT,
    client_timeout: float = DEFAULT_CLIENT_TIMEOUT,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
    result_delay: float = DEFAULT_RESULT_DELAY,
    logic: SchedulerLogic | None = None,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a scheduler on `host:port` (port 0: any free port) until cancelled.

    Reports its `(host, port)` with `task_status.started`. Node monitors register by dialing it; the
    ones in `node_monitors` (addresses) are dialed by the scheduler instead, and redialed if lost.
    A task's outcome may wait up to `result_delay` seconds to share a write to its client with others
    (a job's last outcome never waits; 0: no waiting; see outcome_batching.py).
    A node monitor silent for `node_timeout`, or a client silent for `client_timeout` (clients
    heartbeat), is dropped. `logic` (optional) is the SchedulerLogic to drive, e.g. to read its `stats`
    in tests; otherwise one is made from `scheduler_id`, `probe_ratio` (the default for jobs that set
    none), `seed`, `placement_timeout` (how long a job waits for a node monitor that can take it),
    `max_client_tasks` (unfinished tasks per client) and `client_grace` (how long a lost client may
    take to come back before its running tasks are stopped where they can be).
    With `tls` (tls.TLS), every link is TLS with the cluster CA and peers are who their certificates say
    (a client's jobs run as its certificate's user); else the secret comes from `secret`,
    `secret_file`, or the environment (see auth.load_secret): the insecure mode, for one trusted host.

    Error handling: ListenError if it cannot listen on `host:port` (in use, not this host's address).
    """
    key = None if tls is not None else load_secret(secret, secret_file)
    check_result_delay(result_delay)
    dial = [parse_address(a) for a in node_monitors]
    listeners = await open_listeners(host, port)
    address = listener_address(listeners[0])
    if logic is None:
        name = scheduler_id or f"scheduler@{format_address(address)}"
        logic = SchedulerLogic(
            scheduler_id=name,
            probe_ratio=probe_ratio,
            seed=seed,
            placement_timeout=placement_timeout,
            max_client_tasks=max_client_tasks,
            max_frame=max_frame,
            client_grace=client_grace,
        )
    if logic.placements is None:
        logic.placements = placement_log.from_environment(logic.scheduler_id)
    service = SchedulerService(
        logic,
        secret=key,
        tls=tls,
        node_timeout=node_timeout,
        client_timeout=client_timeout,
        handshake_timeout=handshake_timeout,
        max_frame=max_frame,
        result_delay=result_delay,
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(service.outcomes.run)
            nursery.start_soon(service.run_timers)
            await nursery.start(trio.serve_listeners, service.handle_stream, listeners)
            for target in dial:
                nursery.start_soon(service.keep_dialing, target)
            logger.info("scheduler %s listening on %s", service.name, format_address(address))
            task_status.started(address)
    finally:
        remove_unix_socket(address)
        if logic.placements is not None:
            logic.placements.close()
