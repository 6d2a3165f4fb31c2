"""The node monitors registered with one scheduler, sans-I/O: registration, membership and the views placement reads.

A part of SchedulerLogic (scheduler_logic.py), which drives it and draws the consequences for jobs: it knows
nothing of jobs. Its rules:

- registration: each registered node monitor gets a worker id, never reused (the kernels sample ids below
  `next_worker`). Labels starting RESERVED_LABEL_PREFIX are the scheduler's own (STOPS_TASKS): a node monitor
  naming one breaks the protocol. A node monitor registering under an id that is live on another link from
  another process is refused (RegistrationRefused); one that redialed (same `instance`) replaces its old
  link, as does one whose old link was not heard from since this scheduler last woke from a pause of its own
  (`on_paused`): a node monitor restarted while this process was frozen is not refused for the dead link it
  left (which the shell forgets once it ends). `register` returns the node monitors it replaced, for the
  caller to forget their work.
- membership: a node monitor leaves when its link ends (`remove`) and stops being probed when it drains
  (`drain`); either changes the live set, and every view below is cached until it changes.
- views: the live node monitors (not draining) satisfying a constraint (`eligible_workers`), holding a
  resource request (`holding`: the kernel's feasible_workers), preferred by id (`preferred_workers`), and the
  smallest frame limit of their links (`link_floor`).
- stealing peers: each node monitor registered with a `steal_address` (not draining) is told the others'
  addresses (StealPeers, all of them or a random sample of MAX_STEAL_PEERS) whenever that set changes
  (`tell_peers`, after each batch).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping

import numpy as np

import sparrow_core

from ..errors import ProtocolError
from ..wire.limits import MAX_STEAL_PEERS, clip
from ..wire.messages import Constraint, NodeStatus, Registered, RegisterNodeMonitor, RegistrationRefused, StealPeers
from ..wire.resources import format_resources, largest
from .outbox import Outbox

STOPS_TASKS = "sparrow:stops-tasks"  # the label of node monitors whose executors can stop a task
RESERVED_LABEL_PREFIX = "sparrow:"
# The node monitors' pipelining gate, read from the scheduler's side (the kernel's constants): a node counts as
# short while each of its last RECENT_SPANS busy spans took under SHORT_TASK per task.
RECENT_SPANS = sparrow_core.PIPELINE_RECENT
SHORT_TASK = sparrow_core.PIPELINE_SHORT_TASK


class Node:
    """One registered node monitor, as its scheduler sees it."""

    __slots__ = (
        "busy",
        "can_stop",
        "data_address",
        "draining",
        "heard",
        "instance",
        "jobs",
        "labels",
        "lately",
        "node_id",
        "others",
        "peer",
        "queued",
        "recent_spans",
        "resources",
        "running",
        "short",
        "slots",
        "span_first",
        "span_since",
        "span_tasks",
        "steal_address",
        "worker",
    )

    def __init__(self, peer: Hashable, worker: int, reg: RegisterNodeMonitor, now: float) -> None:
        self.peer = peer
        self.worker = worker
        self.node_id = reg.node_id
        self.instance = reg.instance
        self.slots = reg.slots
        self.labels = frozenset(reg.labels)
        self.can_stop = reg.can_stop  # a constraint's STOPS_TASKS label asks for this
        self.jobs: set[int] = set()  # jobs that probed this node (pruned lazily)
        self.queued = 0  # as of its last heartbeat
        self.busy = 0
        self.running = 0  # tasks this scheduler sent it whose outcome it has not reported yet
        self.others = False  # its last heartbeat sent while it held nothing of ours showed work (other schedulers')
        # bind_idle's view of its recent tasks (_bound_share): a busy span starts as it gets a task of ours with none
        # running, ends as the last one reports; each span's time per task (_span_outcome), the last RECENT_SPANS
        self.span_since = 0.0
        self.span_first = 0.0  # when its span's first outcome came
        self.span_tasks = 0
        self.recent_spans: deque[float] = deque(maxlen=RECENT_SPANS)
        self.short = False  # each recent span took under SHORT_TASK per task (none yet: not)
        self.lately = math.inf  # the most time per task of its last TINY_SPANS spans (none yet: unknown)
        self.heard = now  # when its last message batch arrived
        self.draining = False  # it takes no more reservations: not probed any more
        self.steal_address = reg.steal_address  # "": it does not steal
        self.data_address = reg.data_address  # "": not told (clients upload elsewhere)
        self.resources = reg.resources  # its capacity besides its slots, in units (wire/resources.py)

    def satisfies(self, constraint: Constraint) -> bool:
        if constraint.node_monitors and self.node_id not in constraint.node_monitors:
            return False
        if STOPS_TASKS in constraint.labels:
            return self.can_stop and self.labels.issuperset(x for x in constraint.labels if x != STOPS_TASKS)
        return self.labels.issuperset(constraint.labels)


class Membership:
    """The node monitors registered with one scheduler (module docstring). `nodes` and `by_worker` are read
    directly by the other parts (one dict lookup on their hot paths); only this class changes them."""

    def __init__(
        self,
        scheduler_id: str,
        stats: Counter[str],
        clock: Callable[[], float],
        rng: sparrow_core.Rng,
        frame_limits: Mapping[Hashable, int],
        max_frame: int,
    ) -> None:
        self.scheduler_id = scheduler_id
        self.stats = stats
        self.clock = clock
        self.rng = rng
        self.frame_limits = frame_limits  # peer -> the largest frame its link takes
        self.max_frame = max_frame  # for a peer not in frame_limits
        self.nodes: dict[Hashable, Node] = {}  # registered node monitors by peer
        self.by_worker: dict[int, Node] = {}
        self.next_worker = 0  # the worker id the next node monitor gets: every id ever given is below it
        self.stealers = 0  # registered node monitors that steal
        self.peers_changed = False  # the stealing node monitors changed: tell them (tell_peers)
        self._resumed_at = -math.inf  # when this scheduler last woke from a pause of its own (on_paused)
        self._eligible: dict[Constraint | None, np.ndarray] = {}  # cache of eligible_workers
        self._held_by: dict[tuple, np.ndarray] = {}  # cache of holding
        self._floor: int | None = None  # cache of link_floor
        self._live_ids: dict[str, int] | None = None  # cache: node monitor id -> worker, the live ones
        self._ids: dict[str, Node] | None = None  # cache: node monitor id -> node, every registered one

    # -- changes ----------------------------------------------------------------------------------

    def on_paused(self) -> None:
        """This scheduler was paused: a link not heard from since is not taken for live (module docstring)."""
        self._resumed_at = self.clock()

    def register(self, peer: Hashable, msg: RegisterNodeMonitor, out: Outbox) -> tuple[Node, list[Node]] | None:
        """Register the node monitor behind `peer` and answer it: its node and the stale ones it replaced (gone
        from `nodes` now), or None if it is refused (its id is live elsewhere). ProtocolError for a reserved
        label."""
        reserved = [label for label in msg.labels if label.startswith(RESERVED_LABEL_PREFIX)]
        if reserved:
            raise ProtocolError(f"label {clip(reserved[0])!r}: labels starting {RESERVED_LABEL_PREFIX!r} are reserved")
        stale = [(p, n) for p, n in self.nodes.items() if n.node_id == msg.node_id]
        clones = [
            n for _, n in stale if (n.instance != msg.instance or not msg.instance) and n.heard >= self._resumed_at
        ]
        if clones:
            self.stats["registrations_refused"] += 1
            reason = (
                f"node monitor id {clip(msg.node_id)!r} is already registered by another node monitor "
                f"(its link is live): give each node monitor a unique id with --id"
            )
            out.append((peer, RegistrationRefused(reason)))
            return None
        node = Node(peer, self.next_worker, msg, self.clock())
        self.next_worker += 1
        self.nodes[peer] = node
        self.by_worker[node.worker] = node
        self._invalidate()
        self.peers_changed |= bool(node.steal_address)
        self.stealers += bool(node.steal_address)
        self.stats["node_monitors_registered"] += 1
        out.append((peer, Registered(self.scheduler_id)))
        replaced = []
        for other_peer, _ in stale:  # the same process redialed, or a link silent since our pause: stale
            gone = self.remove(other_peer)
            if gone is not None:
                replaced.append(gone)
        return node, replaced

    def remove(self, peer: Hashable) -> Node | None:
        """The node monitor behind `peer` is gone (None: none was registered there)."""
        node = self.nodes.pop(peer, None)
        if node is None:
            return None
        del self.by_worker[node.worker]
        self._invalidate()
        self.peers_changed |= bool(node.steal_address)
        self.stealers -= bool(node.steal_address)
        self.stats["node_monitors_lost"] += 1
        return node

    def drain(self, node: Node) -> None:
        """`node` drains: it is probed no more (its running tasks still report)."""
        node.draining = True
        self._invalidate()
        self.peers_changed |= bool(node.steal_address)
        self.stats["node_monitors_draining"] += 1

    def tell_peers(self, out: Outbox) -> None:
        """If the stealing node monitors changed, tell each (not draining) the steal addresses of the others:
        all of them, or a random sample of MAX_STEAL_PEERS."""
        if not self.peers_changed:
            return
        self.peers_changed = False
        stealing = [
            n for n in sorted(self.nodes.values(), key=lambda n: n.worker) if n.steal_address and not n.draining
        ]
        addresses = [n.steal_address for n in stealing]
        for i, node in enumerate(stealing):
            others = addresses[:i] + addresses[i + 1 :]
            if len(others) > MAX_STEAL_PEERS:
                picked = sparrow_core.sample_batch(self.rng, len(others), MAX_STEAL_PEERS, 1.0).tolist()
                others = [others[j] for j in sorted(picked)]
            out.append((node.peer, StealPeers(others)))

    def _invalidate(self) -> None:
        self._eligible.clear()
        self._held_by.clear()
        self._floor = None
        self._live_ids = None
        self._ids = None

    # -- views ------------------------------------------------------------------------------------

    def named(self, node_id: str) -> Node | None:
        """The registered node monitor (draining or not) with id `node_id`, if any."""
        ids = self._ids
        if ids is None:
            ids = self._ids = {n.node_id: n for n in self.nodes.values()}
        return ids.get(node_id)

    def any_can_stop(self) -> bool:
        """Whether no node monitor is registered, or one of them can stop a running task."""
        return not self.nodes or any(n.can_stop for n in self.nodes.values())

    def link_floor(self) -> int:
        """The smallest frame limit of the links to live node monitors (not draining); `max_frame` with
        none. Cached until a node monitor comes, goes or drains."""
        floor = self._floor
        if floor is None:
            floor = min(
                (self.frame_limits.get(n.peer, self.max_frame) for n in self.nodes.values() if not n.draining),
                default=self.max_frame,
            )
            self._floor = floor
        return floor

    def preferred_workers(self, task_prefer: list[tuple[str, ...]]) -> list[frozenset[int]] | None:
        """Each task's preferred node monitors as the worker ids of the live ones (not draining) with
        those ids; None when no task has one."""
        live = self._live_ids
        if live is None:
            live = self._live_ids = {n.node_id: n.worker for n in self.nodes.values() if not n.draining}
        preferred = [frozenset(live[name] for name in names if name in live) for names in task_prefer]
        return preferred if any(preferred) else None

    def eligible_workers(self, constraint: Constraint | None) -> np.ndarray:
        """The worker ids, ascending, of the live node monitors (not draining) satisfying `constraint`
        (None: all of them); cached until a node monitor comes, goes or drains."""
        found = self._eligible.get(constraint)
        if found is None:
            found = np.array(
                sorted(
                    n.worker
                    for n in self.nodes.values()
                    if not n.draining and (constraint is None or n.satisfies(constraint))
                ),
                dtype=np.int64,
            )
            self._eligible[constraint] = found
        return found

    def holding(self, candidates: np.ndarray, request: dict[str, int]) -> np.ndarray:
        """The `candidates` (worker ids) whose capacity holds `request`: the kernel's feasible_workers over
        their capacities of the kinds the request names. Cached until a node monitor comes, goes or drains."""
        key = (candidates.tobytes(), tuple(sorted(request.items())))
        found = self._held_by.get(key)
        if found is None:
            kinds = sorted(request)
            capacities = np.array(
                [[self.by_worker[w].resources.get(kind, 0) for kind in kinds] for w in candidates.tolist()],
                dtype=np.int64,
            ).reshape(len(candidates), len(kinds))
            found = candidates[sparrow_core.feasible_workers(capacities, [request[kind] for kind in kinds])]
            self._held_by[key] = found
        return found

    def too_big(self, request: dict[str, int]) -> str:
        """Why no live node monitor takes a job asking for `request`: it and the largest capacity seen."""
        live = [n.resources for n in self.nodes.values() if not n.draining]
        return (
            f"no live node monitor has the resources {format_resources(request)} (the largest capacity seen: "
            f"{format_resources(largest(live, request))})"
        )

    def statuses(self) -> list[NodeStatus]:
        """Each registered node monitor as `sparrow status` shows it, in order of registration."""
        now = self.clock()
        return [
            NodeStatus(
                n.node_id,
                n.slots,
                tuple(sorted(n.labels)),
                n.queued,
                n.busy,
                max(now - n.heard, 0.0),
                n.draining,
                n.data_address,
            )
            for n in sorted(self.nodes.values(), key=lambda n: n.worker)
        ]
