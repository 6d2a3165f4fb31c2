"""The clients' sessions at one scheduler, sans-I/O: who a client is, whose jobs it may run and see, and what
is cleaned up after a client that is gone. A part of SchedulerLogic (scheduler_logic.py).

- a session is a client's id and the user it belongs to. The user is its certificate's (tls.Identity); an
  admin's, or any client's without TLS (the shared-secret mode, tests), is None: it may name any user and
  sees every job. Its jobs' reservations carry the id, so the values their tasks leave at node monitors are
  tagged with it (`session_of`).
- a lost client (`lost`): its running tasks are stopped (StopTask) on the node monitors that can stop tasks,
  and every node monitor is told to drop the values its tasks left there (ReleaseSession naming its user, so
  only that user's values of the session go; None: all of them), once it has not come back (a client of the
  same id and user connecting) within `client_grace` seconds (`stop_orphans`, from the timer). Where a node
  monitor cannot stop tasks (thread executors) they run to their end, their outcomes dropped. Another user's
  client claiming the same id is another session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from typing import Protocol, TypeAlias

from ..wire.limits import clip
from ..wire.messages import ReleaseSession, StopTask
from .outbox import Outbox
from .scheduler_nodes import Node

Session: TypeAlias = tuple[str, str | None]  # a client's id and the user it belongs to (None: any)


class SessionsHost(Protocol):
    """What sessions read of the registered node monitors (scheduler_nodes.Membership)."""

    @property
    def nodes(self) -> Mapping[Hashable, Node]: ...
    @property
    def by_worker(self) -> Mapping[int, Node]: ...


class Sessions:
    """The clients' sessions at one scheduler (module docstring)."""

    def __init__(
        self, host: SessionsHost, stats: Counter[str], clock: Callable[[], float], client_grace: float
    ) -> None:
        self._nodes = host.nodes
        self._by_worker = host.by_worker
        self.stats = stats
        self.clock = clock
        self.client_grace = client_grace
        self.client_ids: dict[Hashable, Session] = {}  # connected client peer -> its session
        # running tasks of lost clients: (when to stop them, the client's session, [(worker, job id, task)])
        self.orphans: list[tuple[float, Session | None, list[tuple[int, int, int]]]] = []

    def connected(self, peer: Hashable, client_id: str) -> None:
        """The client `client_id` is connected behind `peer` (a lost one with this id and user is back)."""
        self.client_ids[peer] = (client_id, viewer(peer))

    def session_of(self, client: Hashable) -> str:
        """The session id the values of `client`'s tasks are tagged with ("": it named none)."""
        session = self.client_ids.get(client)
        return "" if session is None else session[0]

    def lost(self, peer: Hashable, running: list[tuple[int, int, int]]) -> None:
        """The client behind `peer` is gone, with these tasks running ((worker, job id, task)): stop them and
        release its values in `client_grace` seconds unless it is back by then."""
        session = self.client_ids.pop(peer, None)
        if running or (session and session[0]):  # its values are released then, too (ReleaseSession)
            self.orphans.append((self.clock() + self.client_grace, session, running))

    def stop_orphans(self, out: Outbox) -> None:
        """Clean up after the lost clients whose grace is over and which are not back."""
        now = self.clock()
        back = set(self.client_ids.values())
        while self.orphans and self.orphans[0][0] <= now:  # in order of loss: deadlines ascend
            _, session, running = self.orphans.pop(0)
            if session is not None and session in back:
                continue  # it came back: its tasks' outcomes are dropped as they come
            if session and session[0]:  # the values its tasks left at node monitors (only its user's)
                self.stats["sessions_released"] += 1
                out.extend((node.peer, ReleaseSession(*session)) for node in self._nodes.values())
            for worker, job_id, task in running:
                node = self._by_worker.get(worker)
                if node is None:
                    continue  # lost meanwhile: the slot went with it
                if node.can_stop:
                    self.stats["orphans_stopped"] += 1
                    out.append((node.peer, StopTask(job_id, task)))
                else:
                    self.stats["orphans_left_running"] += 1


def job_user(client: Hashable, named: str) -> tuple[str, str | None]:
    """The user a job of `client` naming `named` runs as, and the reason to reject it (or None): a
    client authenticated by certificate runs as its user (an admin as the one it names)."""
    identity = getattr(client, "identity", None)
    if identity is None or identity.admin:
        return named, None
    if named and named != identity.user:
        return (
            named,
            f"this client is authenticated as user {identity.user!r}: it may not submit a job as {clip(named)!r}",
        )
    return identity.user, None


def viewer(client: Hashable) -> str | None:
    """Whose jobs `client` may see: its certificate's user; None (all) for an admin or without one (the
    insecure mode, where users are not authenticated)."""
    identity = getattr(client, "identity", None)
    return None if identity is None or identity.admin else identity.user
