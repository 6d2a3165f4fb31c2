"""Client.scatter's part of the client (trio): values the client puts on node monitors itself, each held then
as a task's result is.

A scattered value is a job of one task that never runs (`job.upload`): its value is pickled here and uploaded
straight to a node monitor's data listener (data/upload.py), chosen at random among those its scheduler knows
(StatusReply.nodes: their data addresses, told at registration; the values of one call spread over them in
turn); its outcome, decided here, is the value's reference. So it is fetched by `result()`, passed to
dependents as a reference (they are placed toward it, and its node monitor reads it from its own store),
and released once nobody holds it, or with the client's session, as any kept result. Its lineage (`keep`):
the job's payload is the pickled value, so that a value lost with its node monitor is uploaded again from it
(the client logic's recompute makes an upload job of it, which the shell uploads as the first); without it,
a dependent of a lost value fails with DependencyFailed naming it (ValueLost).

Error handling: UploadFailed (no node monitor tells a data address, or the upload failed: refused, stalled,
link lost) ends the job's task with that exception.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle
import trio

from ..data import packed
from ..data.shared import SHARE_MIN
from ..errors import UploadFailed
from ..wire.messages import ValueRef
from .job import Job

TARGETS_TTL = 2.0  # seconds the node monitors' data addresses from a StatusReply are reused for


class Pickled:
    """A value its caller has pickled already (`data`: as `pickle_value` pickles it), so that
    scattering it does not pickle it again (DaskScheduler pickles a graph's data to see its size)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def pickle_value(value: object) -> bytes:
    """`value` as it is uploaded: with its buffers out of band (data/packed.py: a dependent's worker and `result()`
    make its arrays over those bytes in place) if it has buffers and packs to over SHARE_MIN bytes (its node
    monitor keeps it in a memory file then, as a worker's big result); else a plain pickle (protocol 5)."""
    data, buffers = packed.dump(value)
    if not buffers:
        return data
    if packed.packed_size(data, buffers) > SHARE_MIN:
        return packed.pack(data, buffers)
    return cloudpickle.dumps(value, protocol=5)  # small: its buffers in band, copied out when it is read


def known_size(value: object) -> int | None:
    """The bytes `value` holds when that is known without pickling it: a bytes-like or str (its length), a numpy
    array (its buffer), a pandas Series or DataFrame (its columns' buffers, not the objects of an object
    column); None for anything else."""
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        return len(value)
    module = type(value).__module__
    if module.startswith("numpy"):
        nbytes = getattr(value, "nbytes", None)
        return nbytes if type(nbytes) is int else None
    if module.startswith("pandas") and callable(getattr(value, "memory_usage", None)):
        usage = value.memory_usage(deep=False)  # type: ignore[attr-defined]
        return int(usage.sum() if hasattr(usage, "sum") else usage)
    return None


def prepare(values: Iterable, make_job: Callable[[list[bytes]], Job], keep: bool) -> tuple[list[Job], list[bytes]]:
    """The upload jobs of one task (made by `make_job(payloads)`) and the pickled values to upload for them (a
    `Pickled` value as it is); with `keep`, each job's payload is its value's bytes (its lineage), else it has none."""
    jobs, data = [], []
    for value in values:
        pickled = value.data if type(value) is Pickled else pickle_value(value)  # read back by packed.loads
        job = make_job([pickled])
        job.upload = True
        if not keep:
            job.payloads[0] = None
        jobs.append(job)
        data.append(pickled)
    return jobs, data


class Scatter:
    """The uploads of the client `client` (its Uploader, the data addresses of its scheduler's node monitors)."""

    def __init__(self, client: Any) -> None:  # the Client (core.py imports this module: no import back)
        self._client = client
        self._targets: list[tuple[str, str]] = []
        self._targets_at = -float("inf")

    async def targets(self) -> list[tuple[str, str]]:
        """(node id, data address) of every node monitor the scheduler knows that takes uploads (not draining)."""
        now = trio.current_time()
        if now - self._targets_at > TARGETS_TTL or not self._targets:
            reply = await self._client.status()
            self._targets = [(n.node_id, n.data_address) for n in reply.nodes if n.data_address and not n.draining]
            self._targets_at = now
        return self._targets

    async def upload(self, jobs: list[Job], values: list[bytes]) -> None:
        """Add these upload jobs and upload each of `values` (pickled) for the job beside it, all at once,
        spread over the node monitors; each job ends with its value's reference, or its upload's UploadFailed."""
        logic = self._client._logic
        for job in jobs:
            logic.add(job)
        mine = set(jobs)
        others = [job for job in logic.take_uploads() if job not in mine]
        if others:  # a lost value's upload again, added meanwhile: it goes too
            jobs, values = [*jobs, *others], [*values, *(job.payloads[0] for job in others)]
        await self.send(jobs, values)

    async def send(self, jobs: list[Job], values: list) -> None:
        """Upload `values` for the upload jobs (added and taken) beside them (see `upload`)."""
        client = self._client
        try:
            targets = await self.targets()
            if not targets:
                raise UploadFailed(
                    f"scheduler {client.connected_to} knows no node monitor that takes uploads (none registered, "
                    "or all are draining or run a version without them)"
                )
        except Exception as exc:  # ConnectionLost, trio.TooSlowError (status), UploadFailed
            failure = exc if isinstance(exc, UploadFailed) else UploadFailed(f"cannot choose a node monitor: {exc}")
            for job in jobs:
                self._ended(job, failure)
            return
        order = random.sample(targets, len(targets))
        async with trio.open_nursery() as nursery:
            for i, (job, value) in enumerate(zip(jobs, values, strict=True)):
                nursery.start_soon(self._one, job, value, order[i % len(order) :] + order[: i % len(order)])

    async def _one(self, job: Job, value: bytes, targets: list[tuple[str, str]]) -> None:
        """Upload `value` for `job` to the first of `targets` that takes it (one that cannot be reached, or
        refuses it, is left for the next: it may be gone, or full); UploadFailed of the last if none does."""
        failure = None
        for node_id, address in targets:
            try:
                key = await self._client._uploader.put(address, node_id, value)
            except UploadFailed as exc:
                failure = exc
                self._targets_at = -float("inf")  # ask again next time: it may be gone
                continue
            self._ended(job, ValueRef(node_id, address, key, len(value)))
            return
        assert failure is not None  # targets is never empty
        self._ended(job, failure)

    def _ended(self, job: Job, result: ValueRef | BaseException) -> None:
        client = self._client
        client._logic.uploaded(job, result)
        client._dispatch()
