"""A node monitor's cache of the code jobs ship (code_archive.py), on disk, by user and by the archive's SHA-256.

`acquire(user, digest, fetch)` gives the folder the archive is unpacked in, `ROOT/USERDIR/DIGEST` (py/ and wd/
inside), fetching it (`fetch()`: the data plane, from the client's upload) and unpacking it on its first use:
tasks of one user that arrive together share one fetch. The archive's bytes must hash to the digest its
tasks name, and every limit of the archive is checked again while it is unpacked (never trusted: the client
may not be ours). Each task holds its entry from `acquire` to `release`.

- **One folder per user, never shared.** USERDIR is the cluster user's own (`user-NAME`, or `hash-...` of a name
  that cannot be a file's), mode 0700; with task users (task_users.py) it and everything in it belong to the
  user's task user, so that user's workers read it and no other's can. ROOT is 0711 then (entered, not listed),
  else 0700. Files are read-only: an entry is named by its content.
- **Bounded.** At most `max_entries` entries and `max_bytes` of unpacked files: when an entry is added, the least
  recently used entries not in use by a running task are removed until both hold (entries in use are never
  removed, so while more tasks hold entries than the bounds allow, the cache is over them until they end).
- An entry is unpacked in a `.part-` folder beside it and renamed into place once complete, so a half-written
  entry is never used; a failed one is removed.

Error handling: CodeError (the archive is not the one named, or breaks a limit), ValueLost (fetch's) and OSError
propagate to the caller (which fails the task with the reason); nothing of a failed entry stays.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from ..errors import CodeError
from .code_archive import LIMITS, CodeLimits, unpack

DEFAULT_CACHE_BYTES = 2 * 2**30
DEFAULT_CACHE_ENTRIES = 64
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")

Owner = Callable[[str], "tuple[int, int] | None"]  # user -> (uid, gid) of its task user; None: the service's own


def check_cache_bounds(max_bytes: int, max_entries: int, limits: CodeLimits = LIMITS) -> None:
    """Refuse (ValueError, naming the setting) bounds under which one archive at its limits does not fit."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < limits.max_bytes:
        raise ValueError(
            f"code_cache_bytes must be an int of at least {limits.max_bytes:,} bytes (one archive at its limit), "
            f"got {max_bytes!r}"
        )
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise ValueError(f"code_cache_entries must be an int >= 1, got {max_entries!r}")


def user_dir(user: str) -> str:
    """The name of `user`'s folder: readable if the name can be a file's, else a hash of it (no two users share
    one: the two kinds have different prefixes)."""
    if _FILE_NAME.fullmatch(user):
        return f"user-{user}"
    return "hash-" + hashlib.sha256(user.encode()).hexdigest()[:40]


@dataclass
class _Entry:
    path: str
    size: int
    holders: int = 0


@dataclass
class _Pending:
    done: trio.Event = field(default_factory=trio.Event)


class CodeCache:
    """The code cache of one node monitor, under `root` (a private folder it owns: see `make`)."""

    def __init__(
        self,
        root: str,
        *,
        max_bytes: int = DEFAULT_CACHE_BYTES,
        max_entries: int = DEFAULT_CACHE_ENTRIES,
        limits: CodeLimits = LIMITS,
        owner: Owner | None = None,
    ) -> None:
        check_cache_bounds(max_bytes, max_entries, limits)
        self.root = root
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.limits = limits
        self._owner = owner
        self._entries: OrderedDict[tuple[str, bytes], _Entry] = OrderedDict()  # least recently used first
        self._pending: dict[tuple[str, bytes], _Pending] = {}
        self.bytes = 0  # unpacked bytes of the entries
        self.stats = {"hits": 0, "fetched": 0, "evicted": 0, "refused": 0}

    @classmethod
    def make(cls, *, shared_with_task_users: bool, **kwargs: object) -> CodeCache:
        """A cache in a fresh private folder of the system's temporary folder (TMPDIR), removed by `close`;
        0711 if task users must reach their folders in it, else 0700."""
        root = tempfile.mkdtemp(prefix="sparrow-code-")
        os.chmod(root, 0o711 if shared_with_task_users else 0o700)
        return cls(root, **kwargs)  # type: ignore[arg-type]  # the constructor's keywords

    def close(self) -> None:
        """Remove the cache and everything in it."""
        shutil.rmtree(self.root, ignore_errors=True)
        self._entries.clear()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def acquire(self, user: str, digest: bytes, fetch: Callable[[], Awaitable[object]]) -> str:
        """The folder of the code `digest` of `user`'s, held until `release(user, digest)`; fetched with `fetch()`
        (bytes-like) and unpacked if it is not here. Raises as the module docstring says."""
        name = (user, digest)
        while True:
            held = self.hold(user, digest)
            if held is not None:
                return held
            pending = self._pending.get(name)
            if pending is None:
                break
            await pending.done.wait()  # then it is here, or it failed and this one tries again
        pending = self._pending[name] = _Pending()
        try:
            data = await fetch()
            if hashlib.sha256(memoryview(data)).digest() != digest:  # type: ignore[arg-type]  # bytes-like
                self.stats["refused"] += 1
                raise CodeError(f"the code fetched is not the archive {digest.hex()[:12]}... its tasks name")
            try:
                path, size = await trio.to_thread.run_sync(self._unpack, user, digest, data)
            except CodeError:
                self.stats["refused"] += 1
                raise
            self.stats["fetched"] += 1
            self._entries[name] = _Entry(path, size, holders=1)
            self.bytes += size
            await self._evict()
            return path
        finally:
            del self._pending[name]
            pending.done.set()

    def hold(self, user: str, digest: bytes) -> str | None:
        """`acquire` for code unpacked here already, at once: its folder, held until `release`; None if it is
        not here (then `acquire`)."""
        entry = self._entries.get((user, digest))
        if entry is None:
            return None
        entry.holders += 1
        self._entries.move_to_end((user, digest))
        self.stats["hits"] += 1
        return entry.path

    def path(self, user: str, digest: bytes) -> str:
        """The folder of an entry held by a task (held entries are never removed)."""
        return self._entries[(user, digest)].path

    def release(self, user: str, digest: bytes) -> None:
        """A task that held the entry ended."""
        entry = self._entries.get((user, digest))
        if entry is not None and entry.holders > 0:
            entry.holders -= 1

    async def _evict(self) -> None:
        """Remove the least recently used entries not in use while a bound is passed."""
        gone = []
        for name, entry in list(self._entries.items()):
            if len(self._entries) <= self.max_entries and self.bytes <= self.max_bytes:
                break
            if entry.holders:
                continue
            del self._entries[name]
            self.bytes -= entry.size
            away = f"{entry.path}.gone-{os.urandom(4).hex()}"
            os.rename(entry.path, away)  # its name is free at once: the same code may come back meanwhile
            gone.append(away)
        if gone:
            self.stats["evicted"] += len(gone)
            await trio.to_thread.run_sync(_remove_all, gone)

    def _unpack(self, user: str, digest: bytes, data: object) -> tuple[str, int]:
        """(In a thread.) Unpack into the user's folder; the entry's folder and its bytes."""
        owner = None
        if self._owner is not None:
            try:
                owner = self._owner(user)
            except ValueError as exc:
                raise CodeError(str(exc)) from None
        folder = os.path.join(self.root, user_dir(user))
        try:
            os.mkdir(folder, 0o700)
            if owner is not None:
                os.chown(folder, *owner)
        except FileExistsError:
            pass
        final = os.path.join(folder, digest.hex())
        part = tempfile.mkdtemp(prefix=".part-", dir=folder)
        try:
            size = unpack(data, part, self.limits)  # type: ignore[arg-type]  # bytes-like
            os.chmod(part, 0o755)
            if owner is not None:
                _chown_all(part, owner)
            os.rename(part, final)
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
        return final, size


def _chown_all(top: str, owner: tuple[int, int]) -> None:
    os.chown(top, *owner, follow_symlinks=False)
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), *owner, follow_symlinks=False)


def _remove_all(paths: list[str]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
