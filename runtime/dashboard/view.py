"""One immutable snapshot of what the dashboard shows (a `View`), taken in the scheduler's thread once
a second and read by the HTTP thread: the HTTP side never touches the scheduler's live state."""

from __future__ import annotations

import msgspec

from ..wire.messages import JobStatus

NODE_STATES = ("up", "draining", "lost")


class NodeRow(msgspec.Struct, frozen=True):
    """A node monitor: `state` up, draining or lost; `silent_for`: seconds since its last message
    (up, draining) or since it was lost."""

    node_id: str
    address: str
    state: str
    slots: int
    busy: int
    queued: int
    silent_for: float
    labels: tuple[str, ...] = ()


class Point(msgspec.Struct, frozen=True):
    """One sample: `t` (the scheduler's clock, seconds), task outcomes and launches per second since
    the previous sample, the scheduling delay and job response p50/p99 in seconds over the quantile
    window (None: nothing observed), jobs in flight and busy slots."""

    t: float
    tasks_per_s: float
    launched_per_s: float
    delay_p50: float | None
    delay_p99: float | None
    response_p50: float | None
    response_p99: float | None
    jobs_in_flight: int
    busy_slots: int


class View(msgspec.Struct, frozen=True):
    """Everything on the page. `jobs` lists the oldest jobs in flight (as `sparrow status` shows them),
    at most `JOBS_LISTED`; `jobs_in_flight` counts them all. `history` and `window` are in seconds."""

    scheduler_id: str
    taken_at: float
    uptime: float
    nodes: tuple[NodeRow, ...]
    jobs_in_flight: int
    jobs: tuple[JobStatus, ...]
    counters: dict[str, int]
    points: tuple[Point, ...]
    history: float
    window: float
    metrics: bool  # whether /metrics serves Prometheus metrics here


JOBS_LISTED = 20
