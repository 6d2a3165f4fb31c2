"""A job's code as it travels: the client packs its `py_modules` and `working_dir` into one deterministic zip named
by its SHA-256, and a node monitor unpacks it, checking every limit again (it never trusts the archive).

Layout of the archive: each of `py_modules` under `py/` (a package directory as `py/NAME/...`, a module file as
`py/NAME.py`: `py/` goes first on the worker's `sys.path`), the working directory's files under `wd/` (the worker
runs its tasks there, and it is on `sys.path` after `py/`). Only regular files are entries: no directory
entries, no links. Deterministic: entries sorted by name, every time stamp 1980-01-01, modes 0644 or 0755 (the
executable bit kept), deflated at one level, so the same files give the same bytes and so the same name, and a
changed file a new one. Left out: `__pycache__` and the other SKIPPED_DIRS, and `*.pyc` (the client's own
imports write them; they would change the name without changing the code).

Limits (CodeLimits; the same at both ends): the files' total size, their count, a path's length; a path that is
absolute, has `..`, `.` or empty parts, a backslash or a NUL is refused; a link out of its directory (or to a
directory, or dangling), a device, a FIFO or a socket is refused by the packer, and any entry that is not a
regular file by the unpacker. The unpacker also refuses an entry that is encrypted, compressed otherwise than
stored or deflated, claims a ratio no deflate stream reaches (MAX_RATIO: a lie), or inflates past the size it
declares (counted while extracting, so a bomb stops at its declared size), and the total past the limit.

Error handling: CodeError (a ValueError) naming the file and the limit, from the packer before anything is sent
and from the unpacker before or while it writes (the caller removes what it wrote).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import types
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import CodeError

PY = "py/"
WD = "wd/"
SKIPPED_DIRS = frozenset(("__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"))
SKIPPED_SUFFIXES = (".pyc", ".pyo")
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can state
MAX_RATIO = 1100  # deflate expands at most about 1032:1; an entry that claims more is lying
COMPRESS_LEVEL = 6
READ_SIZE = 1 << 16


@dataclass(frozen=True)
class CodeLimits:
    """What a job's code may be: at most `max_bytes` of files in all (uncompressed), `max_files` files, and
    paths of at most `max_path` characters."""

    max_bytes: int = 256 * 2**20
    max_files: int = 20_000
    max_path: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_files", "max_path"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")


LIMITS = CodeLimits()


@dataclass(frozen=True)
class Packed:
    """A packed archive: its bytes, their SHA-256 (`digest`, 32 bytes), its files and their total size."""

    data: bytes
    digest: bytes
    files: int
    size: int

    @property
    def name(self) -> str:
        """The digest in hex, the archive's name (a node monitor's cache entry is named by it)."""
        return self.digest.hex()


# -- the client's side ---------------------------------------------------------------------------------------


def sources(py_modules: Iterable[object] = (), working_dir: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """The (archive name, local path) roots to pack: each of `py_modules` (a package directory, a module file or
    an imported top-level module) and `working_dir`. Raises CodeError for an entry that is none of these, a name
    that is not importable, or two entries of the same name."""
    if isinstance(py_modules, (str, bytes, os.PathLike, types.ModuleType)):
        raise CodeError(f"py_modules is a list of packages, modules or files: give [{py_modules!r}]")
    roots: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in py_modules:
        path = _module_path(entry)
        name = os.path.basename(path)
        module = name[:-3] if os.path.isfile(path) else name
        if not module.isidentifier():
            raise CodeError(f"py_modules entry {path!r}: {module!r} cannot be imported by that name")
        if module in seen:
            raise CodeError(f"py_modules names the module {module!r} twice")
        seen.add(module)
        roots.append((PY + name, path))
    if working_dir is not None:
        path = os.path.abspath(os.fspath(working_dir))
        if not os.path.isdir(path):
            raise CodeError(f"working_dir {path!r} is not a directory")
        roots.append((WD.rstrip("/"), path))
    return roots


def _module_path(entry: object) -> str:
    """The local path a py_modules entry names (an absolute path to a directory or a .py file)."""
    if isinstance(entry, types.ModuleType):
        if "." in entry.__name__:
            raise CodeError(f"py_modules: ship the top-level package of {entry.__name__!r}, not one of its modules")
        paths = list(getattr(entry, "__path__", ()))
        if len(paths) > 1:
            raise CodeError(f"py_modules: {entry.__name__!r} is a namespace package over {len(paths)} directories")
        path = paths[0] if paths else getattr(entry, "__file__", None)
        if not isinstance(path, str) or not os.path.exists(path):
            raise CodeError(f"py_modules: module {entry.__name__!r} has no file of its own (built in, or frozen)")
        if not paths and not path.endswith(".py"):
            raise CodeError(f"py_modules: module {entry.__name__!r} is not a .py file ({path})")
        return os.path.abspath(path)
    if not isinstance(entry, (str, os.PathLike)):
        raise CodeError(f"py_modules entries are directories, .py files or modules, not {type(entry).__name__}")
    path = os.path.abspath(os.fspath(entry))
    if os.path.isdir(path) or (os.path.isfile(path) and path.endswith(".py")):
        return path
    raise CodeError(f"py_modules entry {path!r} is neither a package directory nor a .py file")


def walk(roots: list[tuple[str, str]], limits: CodeLimits = LIMITS) -> list[tuple[str, str, os.stat_result]]:
    """Every file to pack as (archive name, local path, its stat), sorted by name, checked against `limits`
    (count, total size, paths) and for what the archive cannot hold (links out, devices). Reads no file."""
    files: list[tuple[str, str, os.stat_result]] = []
    total = 0
    for prefix, root in roots:
        for name, path, st in _files(prefix, root):
            check_name(name, limits)
            files.append((name, path, st))
            total += st.st_size
            if len(files) > limits.max_files:
                raise CodeError(f"the code has over {limits.max_files:,} files (the limit); {root} is too many")
            if total > limits.max_bytes:
                raise CodeError(
                    f"the code is over {limits.max_bytes:,} bytes (the limit) by {path} ({st.st_size:,} bytes)"
                )
    files.sort(key=lambda file: file[0])
    return files


def _files(prefix: str, root: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """The files under `root` (or `root` itself, a file) as (archive name, path, stat); a link to a file in
    `root` as that file."""
    if not os.path.isdir(root):
        yield prefix, root, _regular(root, os.path.dirname(root))
        return
    real_root = os.path.realpath(root)
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for d in dirs:
            if os.path.islink(os.path.join(folder, d)):
                raise CodeError(f"{os.path.join(folder, d)} is a link to a directory: the code holds files only")
        for name in sorted(names):
            if name.endswith(SKIPPED_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            yield f"{prefix}/{rel}", path, _regular(path, real_root)


def _regular(path: str, real_root: str) -> os.stat_result:
    """The stat of the regular file `path` (a link's target's, if it lies in `real_root`); CodeError else."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if os.path.commonpath([target, real_root]) != real_root:
            raise CodeError(f"{path} links out of its directory (to {target}): the code may not reach outside it")
        try:
            st = os.stat(path)
        except OSError:
            raise CodeError(f"{path} is a dangling link") from None
    if not stat.S_ISREG(st.st_mode):
        raise CodeError(f"{path} is not a regular file (a device, FIFO, socket or link to a directory)")
    return st


def signature(files: list[tuple[str, str, os.stat_result]]) -> tuple:
    """What says whether files changed without reading them: each one's name, size, times and inode."""
    return tuple((name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for name, _, st in files)


def pack(files: list[tuple[str, str, os.stat_result]], limits: CodeLimits = LIMITS) -> Packed:
    """The deterministic archive of `files` (walk's). Raises CodeError if a file grew past the limit meanwhile,
    OSError if one cannot be read."""
    buf = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as archive:
        for name, path, st in files:
            with open(path, "rb") as f:
                data = f.read(limits.max_bytes - total + 1)
            total += len(data)
            if total > limits.max_bytes:
                raise CodeError(f"the code is over {limits.max_bytes:,} bytes (the limit) by {path}")
            info = zipfile.ZipInfo(name, EPOCH)
            info.create_system = 3  # unix: the mode below is read
            info.external_attr = (stat.S_IFREG | (0o755 if st.st_mode & 0o111 else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data, compresslevel=COMPRESS_LEVEL)
    data = buf.getvalue()
    return Packed(data, hashlib.sha256(data).digest(), len(files), total)


def pack_code(
    py_modules: Iterable[object] = (), working_dir: str | os.PathLike | None = None, limits: CodeLimits = LIMITS
) -> Packed:
    """`sources`, `walk` and `pack` in one."""
    return pack(walk(sources(py_modules, working_dir), limits), limits)


# -- the node monitor's side ---------------------------------------------------------------------------------


def check_name(name: str, limits: CodeLimits = LIMITS) -> None:
    """Refuse (CodeError) an entry name that could land outside the folder it is unpacked into, or elsewhere
    than under py/ or wd/."""
    if len(name) > limits.max_path:
        raise CodeError(f"the path {name[:64]!r}... is over {limits.max_path:,} characters (the limit)")
    if "\\" in name or "\0" in name:
        raise CodeError(f"the path {name!r} has a backslash or a NUL")
    if name.startswith("/"):
        raise CodeError(f"the path {name!r} is absolute")
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise CodeError(f"the path {name!r} has an empty, '.' or '..' part")
    if parts[0] + "/" not in (PY, WD) or len(parts) < 2:
        raise CodeError(f"the path {name!r} is not under {PY} or {WD}")


def unpack(data: bytes | bytearray | memoryview, into: str, limits: CodeLimits = LIMITS) -> int:
    """Extract the archive `data` into the empty folder `into`, checking everything (module docstring); the
    bytes written. Raises CodeError (what it wrote stays: the caller removes `into`)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise CodeError(f"the code is not a valid archive: {exc}") from None
    with archive:
        infos = archive.infolist()
        _check_entries(infos, limits)
        total = 0
        for info in infos:
            total = _extract(archive, info, into, total, limits)
    return total


def _check_entries(infos: list[zipfile.ZipInfo], limits: CodeLimits) -> None:
    """Refuse an archive whose entries break a limit, before anything is written."""
    if len(infos) > limits.max_files:
        raise CodeError(f"the code has {len(infos):,} files, over the limit of {limits.max_files:,}")
    declared = 0
    names: set[str] = set()
    for info in infos:
        name = info.filename
        check_name(name, limits)
        if name in names:
            raise CodeError(f"the path {name!r} is in the archive twice")
        names.add(name)
        mode = info.external_attr >> 16
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: no type stated (another system's zip): a file
            raise CodeError(f"the entry {name!r} is not a regular file (mode {mode:o}): no links, devices or folders")
        if info.flag_bits & 0x1:
            raise CodeError(f"the entry {name!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise CodeError(
                f"the entry {name!r} is compressed with method {info.compress_type}: only stored or deflated"
            )
        if info.file_size > max(info.compress_size, 1) * MAX_RATIO:
            raise CodeError(
                f"the entry {name!r} claims {info.file_size:,} bytes from {info.compress_size:,}: no deflate stream "
                "expands so much (an archive bomb?)"
            )
        declared += info.file_size
        if declared > limits.max_bytes:
            raise CodeError(f"the code declares over {limits.max_bytes:,} bytes of files (the limit)")


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, into: str, total: int, limits: CodeLimits) -> int:
    """Write one checked entry under `into`, counting what it inflates to; the running total."""
    name = info.filename
    target = os.path.join(into, *name.split("/"))
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    executable = (info.external_attr >> 16) & 0o111
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o600)
    written = 0
    try:
        with archive.open(info) as source:
            while chunk := source.read(READ_SIZE):
                written += len(chunk)
                if written > info.file_size:
                    raise CodeError(f"the entry {name!r} inflates past the {info.file_size:,} bytes it declares")
                if total + written > limits.max_bytes:
                    raise CodeError(f"the code inflates past {limits.max_bytes:,} bytes (the limit) at {name!r}")
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o555 if executable else 0o444)  # read-only: an entry is named by its content
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise CodeError(f"the entry {name!r} is corrupt: {exc}") from None
    finally:
        os.close(fd)
    return total + written
