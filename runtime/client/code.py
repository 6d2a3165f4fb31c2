"""The code a client ships with its jobs (`py_modules`, `working_dir`): packed once per content, uploaded once per
archive over the data plane, and named by every task of its jobs (data/code_archive.py, data/dependent.py).

- `CodeSource` packs the named packages, module files and working directory (checked against the limits then: a
  CodeError before anything is sent) and, for each job, gives the archive of the files as they are: at most every
  `recheck` seconds (RECHECK) it walks them again, without reading them, and packs them again only if a name, size,
  time or inode changed. A saved file is so seen by the jobs submitted from about a second later; its archive has
  a new name, and its tasks run the new code (wire/code_env.py).
- `CodeUploads` uploads an archive once to one node monitor (a `Client.scatter` upload: Uploader, to one of the
  node monitors the scheduler knows, the next if one refuses), and gives the `CodeRef` its tasks carry; node
  monitors fetch it from there on first use. Jobs submitted while an upload is under way wait for it. Should the
  node monitor holding it leave the scheduler's list (it died), the next job uploads it again. The last
  KEPT_ARCHIVES archives stay uploaded (a job in flight may still need them); older ones, and all of them when
  the client closes, are released.

Error handling: CodeError (a limit, a path, a link out) from `CodeSource` and `current`; UploadFailed from
`ship`, naming the node monitor and why (the job is then not submitted).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import trio

from ..data.code_archive import LIMITS, CodeLimits, Packed, pack, signature, sources, walk
from ..data.dependent import CodeRef
from ..errors import UploadFailed
from ..wire.messages import ValueRef

RECHECK = 1.0  # seconds between two walks of the shipped files to see whether they changed
KEPT_ARCHIVES = 4  # archives of one client kept uploaded (the newest)


class CodeSource:
    """`py_modules` (package directories, .py files, imported top-level modules) and `working_dir`, packed."""

    def __init__(
        self,
        py_modules: Iterable[object] = (),
        working_dir: str | os.PathLike | None = None,
        *,
        limits: CodeLimits = LIMITS,
        recheck: float = RECHECK,
    ) -> None:
        self._roots = sources(py_modules, working_dir)
        if not self._roots:
            raise ValueError("no code to ship: name py_modules or a working_dir")
        self.limits = limits
        self.recheck = recheck
        files = walk(self._roots, limits)
        self._signature = signature(files)
        self.packed = pack(files, limits)
        self._checked = time.monotonic()
        self._lock = threading.Lock()  # the executor's callers pack from their own threads

    @property
    def roots(self) -> list[str]:
        """The local paths shipped."""
        return [path for _, path in self._roots]

    def due(self) -> bool:
        """Whether `current` would walk the files again."""
        return time.monotonic() - self._checked >= self.recheck

    def current(self) -> Packed:
        """The archive of the files as they are (as of the last walk, if it was under `recheck` seconds ago).
        Raises CodeError if they now break a limit, OSError if one cannot be read."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.recheck:
                return self.packed
            files = walk(self._roots, self.limits)
            self._checked = now
            now_signature = signature(files)  # taken before reading: a change while packing shows at the next walk
            if now_signature != self._signature:
                self.packed = pack(files, self.limits)
                self._signature = now_signature
            return self.packed


class CodeUploads:
    """The archives one client uploaded (`client`: its Scatter's node monitors and its Uploader)."""

    def __init__(self, client: Any) -> None:  # the Client (core.py imports this module: no import back)
        self._client = client
        self._refs: OrderedDict[bytes, CodeRef] = OrderedDict()  # digest -> its upload, newest last
        self._uploading: dict[bytes, trio.Event] = {}

    async def ship(self, packed: Packed) -> CodeRef:
        """The reference tasks carry to `packed`, uploaded now if it was not (once: callers at once share it)."""
        digest = packed.digest
        while True:
            ref = self._refs.get(digest)
            if ref is not None and await self._held(ref):
                self._refs.move_to_end(digest)
                return ref
            uploading = self._uploading.get(digest)
            if uploading is None:
                break
            await uploading.wait()  # uploaded, or failed: then this one tries
        uploading = self._uploading[digest] = trio.Event()
        try:
            ref = CodeRef(await self._upload(packed.data), digest)
        finally:
            del self._uploading[digest]
            uploading.set()
        self._refs[digest] = ref
        while len(self._refs) > KEPT_ARCHIVES:
            _, old = self._refs.popitem(last=False)
            self._client._nursery.start_soon(self._client._links.release, [old.ref])
        return ref

    async def _held(self, ref: CodeRef) -> bool:
        """Whether the node monitor `ref`'s upload went to is still registered (the scheduler's list, reused for a
        while: Scatter.targets); if not, the archive is forgotten here, to be uploaded again."""
        try:
            targets = await self._client._scatter.targets()
        except Exception:  # no answer now (ConnectionLost, a timeout): the upload stands until one says otherwise
            return True
        if any(node_id == ref.ref.node_id for node_id, _ in targets):
            return True
        if self._refs.get(ref.digest) is ref:
            del self._refs[ref.digest]
        return False

    async def _upload(self, data: bytes) -> ValueRef:
        client = self._client
        targets = await client._scatter.targets()
        if not targets:
            raise UploadFailed(f"scheduler {client.connected_to} knows no node monitor that takes the job's code")
        failure: UploadFailed | None = None
        for node_id, address in random.sample(targets, len(targets)):
            try:
                key = await client._uploader.put(address, node_id, data)
            except UploadFailed as exc:
                failure = exc  # it may be gone, or full: the next one
                continue
            return ValueRef(node_id, address, key, len(data))
        assert failure is not None
        raise failure

    def take(self) -> list[ValueRef]:
        """Every archive uploaded (to release them: the client closes)."""
        refs = [ref.ref for ref in self._refs.values()]
        self._refs.clear()
        return refs
