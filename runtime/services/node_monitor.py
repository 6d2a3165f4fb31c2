"""The node monitor service: a thin trio shell around NodeMonitorLogic and an executor.

`NodeMonitorService.link` runs one authenticated connection to a scheduler: it sends the logic's
registration and gives it the reply, sends heartbeats, feeds received batches to the logic, sends
what the logic returns, and runs each launched task on the executor (and stops the ones the logic
says to stop: a forced cancel, a task past its timeout, whose timers the logic keeps and
`run_timers` ticks). `serve_node_monitor` dials the given schedulers (and
redials them when a link ends) and also listens, so a scheduler can dial it instead. With `steal`, the
same listener takes its peers' steal links (role node-monitor) and a Stealer (steal.py) steals for it.

Error handling: a scheduler that breaks the protocol gets Error and is disconnected; a scheduler
silent for `scheduler_timeout` seconds (it answers every heartbeat; a pause of this process does not
count, wire/liveness.py) is dropped and redialed. Either
way its queued reservations are dropped and the slots waiting on its answers are freed. An
exception raised while serving one link ends only that link (guard.py). A task's failure,
including its worker process dying, is a normal outcome reported to its scheduler. A scheduler
that refuses the registration (this id is live from another node monitor) is tried again, backing
off, for REFUSED_PATIENCE seconds (the live link may be this node monitor's previous process, dead,
at a scheduler that was paused); then it stops the node monitor: `serve_node_monitor` raises
RegistrationRefused with the scheduler's reason.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import msgspec
import trio

from ..data.code_cache import CodeCache
from ..data.copies import copy_limit
from ..data.dependent import CodeRef, is_remote, unpack_remote, worker_payload
from ..data.links import DataLinks, describe
from ..data.server import DataServer
from ..data.shared import SHARE_MIN, SharedValue, raise_file_limit
from ..data.store import ValueStore
from ..errors import CodeError, ConnectionLost, ProtocolError, RegistrationRefused, ServiceStop, ValueLost
from ..wire.address import Address, format_address, unix_path
from ..wire.connection import Connection, send_grouped
from ..wire.gate import HandshakeGate
from ..wire.guard import contained, log_contained
from ..wire.handshake import accept_and_serve, keep_connected
from ..wire.limits import DEFAULT_MAX_VALUE, LINK_FULL, MESSAGE_OVERHEAD
from ..wire.link_config import LinkConfig
from ..wire.liveness import DEFAULT_SCHEDULER_TIMEOUT
from ..wire.messages import (
    LOST_INPUT,
    SYSTEM,
    TOO_LARGE,
    GetTask,
    Outcome,
    OutcomeToScheduler,
    Output,
    OutputToScheduler,
    TaskToNode,
    ValueRef,
    failed,
)
from . import steal_log
from .burst import Burst
from .capacity import allowed_cpus, host_capacity
from .config import DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_STEAL_TIMEOUT, NodeMonitorConfig
from .fit import HostResources
from .listen import listener_address, open_listeners, remove_unix_socket
from .node_monitor_logic import NodeMonitorLogic, Stop, Withdraw
from .outcome_batching import OutcomeBatcher
from .outcome_pace import OutcomePace
from .output_limit import DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_RATE, output_limit
from .placed import placed_payload
from .steal import Stealer
from .task_users import task_user_owner
from .worker_pool import ProcessExecutor, ThreadExecutor, Ticket

logger = logging.getLogger(__name__)

REDIAL_DELAY = 0.5
# A refused registration (this id is live on another link there) is tried again, backing off from the first delay
# to the last, for REFUSED_PATIENCE seconds before the node monitor stops: the link it collides with may be a
# dead one of this node monitor's previous process that the scheduler has not seen end yet (it was paused).
REFUSED_DELAYS = (0.25, 2.0)
REFUSED_PATIENCE = 5.0
TIMER_INTERVAL = 0.1  # seconds between checks of the running tasks' timeouts
# Pipelining: how long an outcome (and the GetTask of the slot it freed) may wait to share a write to its
# scheduler while a task bound ahead runs next (outcome_batching.py; a bound task's slot needs no answer).
HOLD_DELAY = 0.001


class NodeMonitorService:
    """The links of one node monitor to its schedulers, its logic and its executor."""

    def __init__(
        self,
        logic: NodeMonitorLogic,
        executor: Any,  # make_executor's
        nursery: trio.Nursery,
        *,
        link: LinkConfig,
        node_id: str,
        labels: Sequence[str] = (),
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
        scheduler_timeout: float = DEFAULT_SCHEDULER_TIMEOUT,
        max_value: int = DEFAULT_MAX_VALUE,
        steal_address: str = "",
        steal_timeout: float = DEFAULT_STEAL_TIMEOUT,
        output_rate: int = DEFAULT_OUTPUT_RATE,
    ) -> None:
        if heartbeat_interval >= scheduler_timeout:
            raise ValueError(
                f"heartbeat_interval ({heartbeat_interval}) must be shorter than "
                f"scheduler_timeout ({scheduler_timeout})"
            )
        self.logic = logic
        # run() by serve_node_monitor; without pipelining nothing is ever bound, so nothing waits (delay 0)
        self.outgoing = OutcomeBatcher(HOLD_DELAY if logic.pipeline.asks_ahead else 0, self._may_wait)
        self._pace = OutcomePace(HOLD_DELAY)  # holding pays only while outcomes come closer than that
        self.executor = executor
        self._launch = getattr(executor, "launch", None)  # see worker_pool.py; else `await executor.run`
        # what one read or event makes leaves in one write per peer once it is handled (burst.py): the scheduler's
        # messages here (`_flush`), the workers' in a ProcessExecutor, which holds the same burst around its reads
        self._burst: Burst = getattr(executor, "burst", None) or Burst()
        self._sends: list = []
        self._sends_big = False
        # (key, outcome, ticket) of the tasks that ended in this burst, reported as it ends (`_report`)
        self._ended: deque[tuple[tuple, Outcome, Any]] = deque()
        self._burst.on_settle(self._report)
        self._burst.on_release(self._flush)
        self.can_stop = bool(getattr(executor, "can_stop", False)) and self._launch is not None
        self._takes_inputs = bool(getattr(executor, "takes_inputs", False)) and self._launch is not None
        self._tickets: dict[tuple, object] = {}  # (scheduler, job id, task) -> its executor's ticket
        # pipelining: bound tasks handed to a busy worker ahead (executor.hand_ahead), not started yet
        self._ahead: dict[tuple, Ticket] = {}
        self._hands_ahead = logic.pipeline.asks_ahead and self._launch is not None and hasattr(executor, "hand_ahead")
        if self._hands_ahead:
            executor.returned = self._returned
        self._bound_changed = trio.Event()  # give-back: set when a task is bound here that the executor does not hold
        self._queue_filled = trio.Event()  # just in time: set when reservations wait while `run_ask_ahead` idles
        self._times_requests = logic.pipeline.times_requests  # `run_ask_ahead` runs (and waits on _queue_filled)
        if self._launch is not None and hasattr(executor, "started"):
            executor.started = self._started_late
        self._fetching: dict[tuple, _Fetching] = {}  # (scheduler, job id, task) -> a task fetching its inputs
        # the code jobs ship, unpacked (None: this executor cannot run it), and the tasks holding an entry of it
        self.code: CodeCache | None = None
        self._code_held: dict[tuple, tuple[str, bytes]] = {}
        self.node_id = node_id
        # what its tasks print goes up at most this fast, named after this node monitor (output_limit.py)
        self.output_limit = output_limit(node_id, getattr(executor, "output_cap", 0), output_rate)
        self.labels = tuple(labels)
        self.heartbeat_interval = heartbeat_interval
        self.scheduler_timeout = scheduler_timeout
        self.link_config = link
        self._nursery = nursery
        self._gate = HandshakeGate()
        self._refused_since: dict[str, float] = {}  # scheduler -> when its first refusal in a row came (keep_linked)
        self.instance = secrets.token_hex(8)  # tells this process's re-registrations from a clone's
        self.max_value = max_value
        self.links = DataLinks(
            link=link,
            role="node-monitor",
            peer_id=node_id,
            max_value=max_value,
            # inputs come straight into memory files where the executor takes them so (data/shared.py)
            shared_over=self._takes_inputs and getattr(executor, "share_over", 0),
            # and stay a while as copies, for the next tasks that take them (data/copies.py)
            copies=0 if logic.store is None else copy_limit(logic.store.limit),
        )
        self.steal_address = steal_address
        self.stealer: Stealer | None = None
        if logic.stealing.steal:
            logic.stealing.node_id = node_id
            self.stealer = Stealer(
                logic,
                self._route,
                nursery,
                heartbeat_interval=heartbeat_interval,
                link_timeout=scheduler_timeout,
                steal_timeout=steal_timeout,
                log=steal_log.from_environment(node_id, steal_address),
                link=link,
                role="node-monitor",
                peer_id=node_id,
            )

    # -- links to schedulers ------------------------------------------------------------------------

    async def link(self, conn: Connection, registered: trio.Event | None = None) -> None:
        """Register over `conn` (a scheduler, handshake done) and serve it until the link ends."""
        try:
            with trio.fail_after(self.link_config.handshake_timeout):
                registration = self.logic.registration(
                    self.node_id, self.labels, self.instance, self.can_stop, self.steal_address
                )
                await conn.send_now([registration])
                reply = await conn.receive_one()
            welcome = self.logic.on_registration_reply(conn, reply, conn.peer_name, conn.send_limit)
        except (trio.TooSlowError, ConnectionLost, ProtocolError) as exc:
            logger.warning("registration with %s failed: %s", conn, exc or "timed out")
            await conn.aclose()
            return
        except RegistrationRefused:
            await conn.aclose()
            raise
        self._refused_since.pop(conn.peer_name, None)
        logger.info("registered with %s", conn)
        send_grouped(welcome)
        if registered is not None:
            registered.set()

        def on_messages(msgs: list) -> None:
            self._route(self.logic.on_scheduler_messages(conn, msgs))

        try:
            with contained(logger, f"the link to {conn}"):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._heartbeat, conn)
                    reason = await conn.serve(on_messages, idle_timeout=self.scheduler_timeout)
                    logger.info("link to %s ended: %s", conn, reason)
                    nursery.cancel_scope.cancel()
        finally:  # forgotten before any checkpoint
            self.outgoing.forget(conn)
            self._route(self.logic.on_scheduler_lost(conn))
            await conn.aclose()

    async def keep_linked(self, target: Address, registered: trio.Event) -> None:
        """Dial the scheduler at `target` and link; redial whenever the link ends. A refused registration
        is tried again, backing off, for REFUSED_PATIENCE seconds from the first refusal in a row; then
        RegistrationRefused stops the node monitor."""
        name = format_address(target)
        delay = REFUSED_DELAYS[0]
        while True:
            try:
                await keep_connected(
                    target,
                    partial(self.link, registered=registered),
                    link=self.link_config,
                    role="node-monitor",
                    peer_id=self.node_id,
                    redial_delay=REDIAL_DELAY,
                )
            except RegistrationRefused as exc:
                now = trio.current_time()
                since = self._refused_since.setdefault(name, now)
                if now - since >= REFUSED_PATIENCE:
                    raise
                if now == since:
                    delay = REFUSED_DELAYS[0]
                logger.warning("%s; trying again in %.2f s (for up to %.0f s)", exc, delay, REFUSED_PATIENCE)
                await trio.sleep(delay)
                delay = min(2 * delay, REFUSED_DELAYS[1])

    async def handle_stream(self, stream: trio.abc.Stream) -> None:
        """Serve a scheduler that dialed this node monitor, or (stealing) a peer's steal link."""
        await accept_and_serve(
            stream,
            self._serve_incoming,
            log=logger,
            gate=self._gate,
            link=self.link_config,
            role="node-monitor",
            node_id=self.node_id,
            allowed_roles=("scheduler",) if self.stealer is None else ("scheduler", "node-monitor"),
        )

    async def _serve_incoming(self, conn: Connection) -> None:
        if conn.peer_role == "node-monitor" and self.stealer is not None:
            await self.stealer.serve_thief(conn)
        else:
            await self.link(conn)

    async def _heartbeat(self, conn: Connection) -> None:
        while True:
            await trio.sleep(self.heartbeat_interval)
            conn.send(self.logic.heartbeat())

    async def run_timers(self) -> None:
        """Every TIMER_INTERVAL: stop the tasks that ran past their job's timeout, and drop the copies of fetched
        values that went unused (until cancelled)."""
        while True:
            await trio.sleep(TIMER_INTERVAL)
            self.links.expire_copies()
            if self.logic.deadlines:
                with contained(logger, "stopping the tasks past their timeout"):
                    self._route(self.logic.on_timer())

    async def run_give_back(self) -> None:
        """Give-back (logic.give_back): whenever a bound task could be given back (`give_back_at`), let the logic
        give back those that wait behind running tasks that all overran; sleep until a task is bound otherwise."""
        logic = self.logic
        while True:
            at = logic.give_back_at()
            if at is None:
                self._bound_changed = trio.Event()
                await self._bound_changed.wait()
                continue
            delay = at - logic.clock()
            if delay > 0:
                await trio.sleep(delay)
            with contained(logger, "giving back bound tasks"):
                self._route(logic.on_give_back_timer())

    async def run_ask_ahead(self) -> None:
        """Just in time (logic.pipeline.times_requests): whenever a running task becomes due to ask ahead while
        reservations wait (`ask_ahead_at`), let the logic ask; sleep until reservations wait otherwise."""
        logic = self.logic
        while True:
            at = logic.ask_ahead_at()
            if at is None:
                self._queue_filled = trio.Event()
                await self._queue_filled.wait()
                continue
            delay = at - logic.clock()
            if delay > 0:
                await trio.sleep(delay)
            with contained(logger, "asking ahead"):
                self._route(logic.on_ask_ahead_timer())

    async def drain_when(self, event: trio.Event) -> None:
        """Once `event` is set: drain (take no more reservations) and tell the schedulers at once."""
        await event.wait()
        self._route(self.logic.drain())

    # -- tasks ------------------------------------------------------------------------------------

    def _route(self, out: list) -> None:
        """Start the launched tasks and stop the ones asked, then send the rest with one write per
        scheduler; a burst with a big outcome (over LINK_FULL) waits while the link is full, with the
        GetTask of the slot it frees (backpressure, connection.py). Small ones go at once (they never
        fill a link, and holding them costs a pass of the sender task per outcome: measured), except
        while a task bound ahead is next (pipelining): then outcomes and GetTasks wait up to
        HOLD_DELAY for the next ones (`_may_wait`). All of it leaves once the burst it is part of is handled:
        a read's outcomes from a worker, or a scheduler's messages, go on in one write per peer (`_flush`)."""
        burst = self._burst
        if burst.held:  # a worker's read (or a scheduler's) being handled: its end flushes
            self._route_held(out)
            return
        with burst:
            self._route_held(out)

    def _flush(self) -> None:
        """The end of a burst: send what it routed to the schedulers (a big outcome among it: see `_route`)."""
        if self._sends:
            sends, self._sends = self._sends, []
            big, self._sends_big = self._sends_big, False
            self.outgoing.send(sends, later=big)

    def _route_held(self, out: list) -> None:
        self._route_messages(out)
        self._routed()

    def _route_messages(self, out: list) -> None:
        sends = self._sends
        ahead = self._ahead
        for pair in out:
            peer, msg = pair
            kind = type(msg)
            if kind is OutcomeToScheduler:
                sends.append(pair)
                if len(msg.outcome.payload) > LINK_FULL:
                    self._sends_big = True
            elif kind is TaskToNode:
                key = (peer, msg.job_id, msg.task)
                handed = ahead.pop(key, None) if ahead else None
                if handed is not None:  # handed ahead, and now started (pinned: on_task_done's `started`)
                    self._tickets[key] = handed  # before: its outcome may have come already (adopt calls done)
                    self.executor.adopt(handed, partial(self._finished, key))
                else:
                    self._start(key, msg.payload)
            elif kind is Withdraw:
                handed = self._ahead.pop((peer, msg.job_id, msg.task), None)
                if handed is not None:
                    self.executor.withdraw(handed)
                if self._code_held:  # it will not run here
                    self._release_code((peer, msg.job_id, msg.task))
            elif kind is Stop:
                key = (peer, msg.job_id, msg.task)
                ticket = self._tickets.get(key)
                if ticket is not None and self.can_stop:
                    self.executor.stop(ticket, msg.failure, msg.reason)
                elif key in self._fetching:  # still fetching its inputs: it ends now, never launched
                    self._fetching.pop(key).stop(msg)
            else:
                sends.append(pair)

    def _routed(self) -> None:
        """After routing: hand the new bound tasks ahead, wake the timers that wait for bound or queued ones."""
        logic = self.logic
        bound = logic.bound
        if bound:
            if self._hands_ahead and len(bound) > len(self._ahead):
                self._hand_ahead()
            if logic.give_back and len(bound) > len(logic.pinned):
                self._bound_changed.set()
        if self._times_requests and logic.queue and logic.pipeline.steady:  # a running task may become due to ask
            self._queue_filled.set()
        if self.stealer is not None:
            self.stealer.poke()

    def _hand_ahead(self) -> None:
        """Hand the bound tasks, in order, to busy workers to queue behind their running task (while the
        executor takes them): each then starts as the one before it ends, with no hop through this process
        between them (worker_pool.hand_ahead). Not one whose inputs are still to fetch, nor any after it;
        none while the logic says a pinned task could lose a slot that frees elsewhere (`may_pin`)."""
        logic = self.logic
        if not logic.may_pin:  # the same for all of them: no task ends meanwhile
            return
        ahead = self._ahead
        hand_ahead = self.executor.hand_ahead
        handed: list[tuple] = []
        for scheduler, msg in logic.bound:
            key = (scheduler, msg.job_id, msg.task)
            if key in ahead:
                continue
            payload = msg.payload
            if is_remote(payload):
                ready = self._ready(key, payload)  # its code unpacked here already: it goes too
                if ready is None:
                    break
                payload = ready
            ticket = hand_ahead(payload, key, self._user_of(key))
            if ticket is None:
                if self._code_held:
                    self._release_code(key)  # held again when it starts
                break
            ahead[key] = ticket
            handed.append(key)
        if handed:
            logic.on_handed_ahead(handed)

    def _started_late(self, ticket: Ticket) -> None:
        """A task that waited for a worker (a replacement starting) starts now: so does its timeout."""
        if ticket.tag is not None:
            self.logic.on_started_late(ticket.tag)

    def _returned(self, tickets: list[Ticket]) -> None:
        """Tasks handed ahead to a worker that died before they started: bound tasks again."""
        keys = [ticket.tag for ticket in tickets if self._ahead.pop(ticket.tag, None) is ticket]
        with contained(logger, "taking back the tasks of a dead worker"):
            self._route(self.logic.on_given_back(keys))

    def _may_wait(self, msg: Any) -> bool:  # any message to a scheduler: dispatched on its type
        """While a task bound ahead is next on a slot (pipelining), an outcome (not a big one) and a
        GetTask may wait to share a write: nothing waits for them (module constants); only while outcomes
        come close enough for the next to join them (outcome_pace.py), else the hold costs a wake-up."""
        if not self.logic.bound or not self._pace.close:  # (`close`: an attribute, read per message)
            return False
        kind = type(msg)
        return kind is GetTask or (kind is OutcomeToScheduler and len(msg.outcome.payload) <= LINK_FULL)

    def _start(self, key: tuple, payload: bytes) -> None:
        """Launch task `key` (not handed ahead: `_route_held` adopts those as they were handed)."""
        # a task with inputs to fetch (data/dependent.py) goes through the fetch step, unless it needs only its code
        # and that is unpacked here already (_ready)
        if is_remote(payload):
            ready = self._ready(key, payload)
            if ready is None:
                self._nursery.start_soon(self._fetch_then_launch, key, payload)
                return
            payload = ready
        self._launch_task(key, payload)

    def _ready(self, key: tuple, payload: bytes) -> bytes | None:
        """The worker's payload of a RemoteCall task that needs nothing fetched, at once: no input, and its code
        unpacked here already for its user (held for the task, once: `_code_held`); None for any other (the fetch
        path takes it, and says what is wrong with it)."""
        if self.code is None:
            return None
        try:
            call = unpack_remote(payload)
        except ProtocolError:
            return None
        if call.code is None or call.inputs:
            return None
        if key not in self._code_held:
            user = self._user_of(key)
            if self.code.hold(user, call.code.digest) is None:
                return None
            self._code_held[key] = (user, call.code.digest)
        user, digest = self._code_held[key]
        return worker_payload(call.template, entry=self.code.path(user, digest))

    def _release_code(self, key: tuple) -> None:
        held = self._code_held.pop(key, None)
        if held is not None and self.code is not None:
            self.code.release(*held)

    def _launch_task(self, key: tuple, payload: bytes, inputs: list | None = None) -> None:
        done = partial(self._finished, key)
        fit = self.logic.fit
        memory = 0
        if fit is not None and fit.held:  # tasks with resources run here
            place = fit.place(key)
            if place is not None:  # a task with resources is told its place (placed.py)
                payload = placed_payload(payload, self.node_id, *place)
                memory = fit.memory(key)
        if self._launch is None:
            self._nursery.start_soon(self._run, payload, done)
            return
        if memory:  # its worker is held to it (memory_limit.py)
            ticket = self._launch(payload, done, inputs, self._user_of(key), memory=memory)
        else:
            ticket = self._launch(payload, done, inputs, self._user_of(key))
        if ticket is not None and ticket.done is not None:  # still running (not refused at once)
            self._tickets[key] = ticket
            ticket.tag = key

    def _user_of(self, key: tuple) -> str:
        """The user of the task `key` (its job's): the executor runs it only in a worker of that user's."""
        owner = self.logic.owners.get(key)
        return "" if owner is None else owner[0]

    async def _fetch_then_launch(self, key: tuple, payload: bytes) -> None:
        """`_fetch_inputs`, contained: a bug in it fails that task (once) and the node monitor goes on."""
        reported: list[Outcome | None] = []
        with contained(logger, f"fetching the inputs of task {key[2]} of job {key[1]}"):
            await self._fetch_inputs(key, payload, reported)
        if not reported and key not in self._tickets:
            self._finished(key, failed("the node monitor failed while fetching the task's inputs", SYSTEM))

    async def _fetch_inputs(self, key: tuple, payload: bytes, reported: list) -> None:
        """Fetch the referenced inputs of a task (from this node monitor's store, or from their holders, all
        at once), then launch it with every value in its call; a lost input fails it (LOST_INPUT, the lost keys in
        its payload, so its client can recompute them)."""

        def done(outcome: Outcome) -> None:
            reported.append(outcome)
            self._finished(key, outcome)

        try:
            call = unpack_remote(payload)
        except ProtocolError as exc:
            done(failed(f"the task's payload is not valid: {exc}", SYSTEM))
            return
        total = sum(value.size if isinstance(value, ValueRef) else len(value) for value in call.inputs)
        if total > self.max_value:
            done(failed(f"the task's inputs take {total:,} bytes, over the max_value of {self.max_value:,}", TOO_LARGE))
            return
        values: list = list(call.inputs)
        lost: dict[int, tuple[bytes, str]] = {}

        user = self._user_of(key) if self.link_config.tls is not None else None  # TLS: only the task's user's values

        async def fetch(i: int, ref: ValueRef) -> None:
            try:
                values[i] = await self._value(ref, user)
            except ValueLost as exc:
                lost[i] = (ref.key, f"input {i}: {exc}")

        entry: list[str] = []  # the folder of the job's code, if it ships some
        code_failed: list[Outcome] = []

        async def get_code(code: CodeRef) -> None:
            try:
                entry.append(await self._code_entry(key, code, user))
            except (CodeError, ValueLost, OSError) as exc:
                code_failed.append(failed(f"the job's code {code.digest.hex()[:12]}...: {exc}", SYSTEM))

        fetching = self._fetching[key] = _Fetching()
        try:
            with fetching.scope:
                async with trio.open_nursery() as nursery:  # from every holder at once
                    if call.code is not None:
                        nursery.start_soon(get_code, call.code)
                    for i, value in enumerate(call.inputs):
                        if type(value) is ValueRef:
                            nursery.start_soon(fetch, i, value)
        finally:
            self._fetching.pop(key, None)
        if fetching.stopped is not None:
            done(failed(fetching.stopped.reason, fetching.stopped.failure))
            return
        if code_failed:
            done(code_failed[0])
            return
        if lost:
            keys = [lost[i][0] for i in sorted(lost)]
            done(Outcome(False, msgspec.msgpack.encode(keys), "; ".join(lost[i][1] for i in sorted(lost)), LOST_INPUT))
            return
        code = entry[0] if entry else None
        if self._takes_inputs:  # the values go beside the call, not pickled into it again
            call_payload, inputs = worker_payload(call.template, entry=code), values
        else:
            call_payload, inputs = worker_payload(call.template, values, code), None
        reported.append(None)  # launched: the executor reports it from now on
        self._launch_task(key, call_payload, inputs)

    async def _code_entry(self, key: tuple, code: CodeRef, fetch_as: str | None) -> str:
        """The folder of a task's shipped code, fetched (as `fetch_as`'s, see `_value`) and unpacked on first use
        into its user's own cache (data/code_cache.py), held by the task until it ends. Raises CodeError (also
        where this executor cannot run it), ValueLost, OSError."""
        if self.code is None:
            raise CodeError("this node monitor runs tasks in threads (executor 'thread'): it cannot run shipped code")
        user = self._user_of(key)
        held = self._code_held.get(key)
        if held is not None:  # held already (by _ready; its inputs were fetched meanwhile)
            return self.code.path(*held)
        path = await self.code.acquire(user, code.digest, partial(self._value, code.ref, fetch_as))
        self._code_held[key] = (user, code.digest)
        return path

    async def _value(self, ref: ValueRef, user: str | None) -> bytes | bytearray | SharedValue:
        """An input's value for a task of `user` (None: any user's): from this node monitor's store, or fetched
        from its holder (ValueLost; another user's value is as good as lost)."""
        if ref.node_id == self.node_id:
            store = self.logic.store
            kept = None if store is None else store.get(ref.key, user)
            if kept is None:
                raise ValueLost(f"{describe(ref)} is lost: this node monitor holds no such value of the task's user")
            return kept.value
        return await self.links.fetch(ref, user)

    async def _run(self, payload: bytes, done: Callable[[Outcome], None]) -> None:
        """Run a task on an executor that only offers `await run(payload)`."""
        done(await self.executor.run(payload))

    def _finished(self, key: tuple, outcome: Outcome) -> None:
        """Task `key` ended: reported as the burst it ended in ends (`_report`), in a burst of its own outside one."""
        self._ended.append((key, outcome, self._tickets.pop(key, None)))
        if not self._burst.held:
            with self._burst:
                pass  # its end reports it

    def _report(self) -> None:
        """As a burst ends: report the tasks that ended in it, in turn (each starts the task handed ahead behind it,
        whose outcome may have come in the same read: that one is reported next), then let the logic fill the slots
        and ask ahead once for all of them (on_task_ended, on_tasks_ended)."""
        ended = self._ended
        logic = self.logic
        on_task_ended = logic.on_task_ended
        route = self._route_messages
        code_held = self._code_held
        while ended:
            count = 0
            while ended:
                key, outcome, ticket = ended.popleft()
                count += 1
                scheduler, job_id, task = key
                if code_held:
                    self._release_code(key)
                successor = getattr(ticket, "successor", None)  # a task handed ahead that started in its place
                started = None if successor is None else successor.tag
                try:  # contained (guard.py), as a plain try: no guard object per task
                    out = on_task_ended(scheduler, job_id, task, outcome, started)
                    output = getattr(ticket, "output", None)  # what it printed (worker_pool.Ticket)
                    if output is not None:
                        self._put_output(out, job_id, task, output)
                    route(out)
                except ServiceStop:
                    raise
                except Exception as exc:
                    log_contained(logger, f"reporting task {task} of job {job_id} to {scheduler}", exc)
            self._pace.outcome(count)  # they came together
            with contained(logger, "asking for the next tasks"):
                self._route_held(logic.on_tasks_ended())

    def _put_output(self, out: list, job_id: int, task: int, output: Output) -> None:
        """Put what the task printed, cut to the rate cap, just before its outcome in `out` (none if its outcome
        is not sent: its scheduler is gone)."""
        for i, (peer, msg) in enumerate(out):
            if type(msg) is OutcomeToScheduler and msg.job_id == job_id and msg.task == task:
                limit, stats = self.output_limit, self.logic.stats
                cut = limit.cut
                output = limit.admit(output)
                stats["output_bytes"] += len(output.stdout) + len(output.stderr)
                stats["output_cut_bytes"] += limit.cut - cut
                out.insert(i, (peer, OutputToScheduler(job_id, task, output)))
                return


class _Fetching:
    """A task fetching its inputs: its cancel scope, and the Stop that ended it (a timeout, a forced cancel)."""

    __slots__ = ("scope", "stopped")

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.stopped: Stop | None = None

    def stop(self, msg: Stop) -> None:
        self.stopped = msg
        self.scope.cancel()


def make_executor(
    kind: Any,
    slots: int,
    max_frame: int,
    task_user: str | None = None,
    share_over: int = 0,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> Any:  # ProcessExecutor, ThreadExecutor, or any object with `await run(payload)` (worker_pool.py)
    """ "process" or "thread", or an executor object (see worker_pool.py) used as is; `task_user`: the
    user process executors run tasks as, `share_over`: the bytes over which values cross between them and
    the node monitor as memory files, `output_cap`: the bytes of each task's stdout and stderr they capture
    (ProcessExecutor; threads share the node monitor's)."""
    if kind == "process":
        return ProcessExecutor(
            slots, max_frame=max_frame, task_user=task_user, share_over=share_over, output_cap=output_cap
        )
    if task_user is not None:
        raise ValueError(f"task_user={task_user!r} needs process executors (executor='process'), got {kind!r}")
    if kind == "thread":
        return ThreadExecutor(slots)
    if isinstance(kind, str):
        raise ValueError(f"executor must be 'process' or 'thread', got {kind!r}")
    return kind


def node_resources(declared: Mapping[str, int] | None) -> HostResources:
    """What this host offers a NodeMonitorLogic for `declared` (None: detected, capacity.py)."""
    capacity, gpu_ids = host_capacity(declared)
    return HostResources(capacity, gpu_ids, allowed_cpus())


def check_value_settings(inline_limit: int, max_value: int) -> None:
    for name, value in (("inline_limit", inline_limit), ("max_value", max_value)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int of bytes >= 0, got {value!r}")


def default_memory_limit() -> int:
    """A quarter of this host's physical memory (1 GiB where it cannot be told)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 1024**3


def advertised(address: Address) -> Address:
    """The address to give others for a listener on `address`: a wildcard host is this host's name."""
    if unix_path(address) is None and address[0] in ("0.0.0.0", "::", ""):
        return (socket.gethostname(), address[1])
    return address


def default_node_id(address: Address) -> str:
    """ "HOST:PORT" (this host's name and the port listened on), or "HOST:PATH" on a Unix socket: unique
    per process on a host."""
    return f"{socket.gethostname()}:{unix_path(address) or address[1]}"


async def serve_node_monitor(
    config: NodeMonitorConfig,
    *,
    executor: Any = None,
    logic: NodeMonitorLogic | None = None,
    drain: trio.Event | None = None,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a node monitor with `config` (config.NodeMonitorConfig: its schedulers, address, slots, queue
    policy, pipelining, stealing, executor, timeouts, value limits and link) until cancelled.

    It registers with every scheduler in `config.schedulers` and listens on `config.host:config.port` for
    schedulers that dial it. Reports its `(host, port)` with `task_status.started` once it is registered with
    all of them (it keeps retrying until then). `executor` (optional) is an executor object to run tasks on
    (worker_pool.py) instead of the config's kind. `logic` (optional) replaces the NodeMonitorLogic made from
    the config, e.g. to read its `stats` in tests (its own `max_frame` bounds the outcomes it reports).
    Setting `drain` (optional) starts a clean shutdown: the node monitor drops its queued reservations,
    takes no more and tells its schedulers, which re-probe them elsewhere; running tasks finish and report
    (wait for `logic.busy == 0`, then cancel). With `config.link.tls` every link is TLS with the cluster CA
    (see serve_scheduler); else the cluster secret (from the environment if the link has none).

    Values (docs/runtime-dask.md, "Values stay where they were made"): a result over `inline_limit` bytes
    stays in this node monitor's memory and its outcome carries a reference; clients and node monitors fetch
    it in chunks from the data listener.

    Error handling: ListenError if it cannot listen on its address (in use, not this host's address);
    ValueError if the link has no secret nor TLS and none is in the environment.
    """
    link = config.link.resolved()
    max_frame, max_value, inline_limit = link.max_frame, config.max_value, config.inline_limit
    host, port = config.host, config.port
    targets = config.schedulers
    if logic is None:
        logic = NodeMonitorLogic(config, host=node_resources(config.resources))
    if logic.store is None:
        memory_limit = config.memory_limit
        logic.store = ValueStore(default_memory_limit() if memory_limit is None else memory_limit)
    logic.inline_limit = inline_limit
    # a worker's private socket carries a whole value (its result, or its inputs), whatever max_frame is
    runner = make_executor(
        config.executor if executor is None else executor,
        logic.slots,
        min(2**32 - 1, max(max_frame, max_value + MESSAGE_OVERHEAD)),
        config.task_user,
        share_over=max(inline_limit, SHARE_MIN),
        output_cap=config.output_cap,
    )
    if getattr(runner, "share_over", 0):
        raise_file_limit()  # each value kept or handed over as a memory file holds descriptors
    listeners = await open_listeners(host, port)
    address = listener_address(listeners[0])
    data_host = config.data_host
    if data_host is None:  # beside the main listener (on its own socket file, for a Unix one)
        data_host = f"{host}.data" if unix_path((host, port)) is not None else host
    data_listeners = await open_listeners(data_host, config.data_port)
    data_address = listener_address(data_listeners[0])
    service: NodeMonitorService | None = None
    async with trio.open_nursery() as nursery:
        try:
            await runner.start(nursery)
            service = NodeMonitorService(
                logic,
                runner,
                nursery,
                link=link,
                node_id=config.node_id or default_node_id(address),
                labels=config.labels,
                heartbeat_interval=config.heartbeat_interval,
                scheduler_timeout=config.scheduler_timeout,
                max_value=max_value,
                steal_address=format_address(advertised(address)),
                steal_timeout=config.steal_timeout,
                output_rate=config.output_rate,
            )
            if isinstance(runner, ProcessExecutor):  # a worker process serves one user: it may run shipped code
                service.code = CodeCache.make(
                    shared_with_task_users=config.task_user is not None,
                    owner=task_user_owner(config.task_user),
                    max_bytes=config.code_cache_bytes,
                    max_entries=config.code_cache_entries,
                )
            logic.holder = (service.node_id, format_address(advertised(data_address)))
            data_server = DataServer(
                logic.store,
                shared_over=service.links.shared_over,  # uploads its workers take as memory files come into one
                node_id=service.node_id,
                link=link,
                max_value=max_value,
            )
            await nursery.start(trio.serve_listeners, data_server.handle_stream, data_listeners)
            await nursery.start(trio.serve_listeners, service.handle_stream, listeners)
            nursery.start_soon(service.run_timers)
            if logic.give_back:
                nursery.start_soon(service.run_give_back)
            if logic.pipeline.times_requests:
                nursery.start_soon(service.run_ask_ahead)
            nursery.start_soon(service.outgoing.run)
            if service.stealer is not None:
                nursery.start_soon(service.stealer.run)
            if drain is not None:
                nursery.start_soon(service.drain_when, drain)
            registered = [trio.Event() for _ in targets]
            for target, event in zip(targets, registered, strict=True):
                nursery.start_soon(service.keep_linked, target, event)
            for event in registered:
                await event.wait()
            logger.info("node monitor %s listening on %s", service.node_id, format_address(address))
            task_status.started(address)
            await trio.sleep_forever()
        finally:
            remove_unix_socket(address)
            remove_unix_socket(data_address)
            if service is not None:
                with trio.CancelScope(shield=True):
                    await service.links.aclose()
                    if service.stealer is not None:
                        await service.stealer.aclose()
            await runner.aclose()
            if service is not None and service.code is not None:
                service.code.close()
