"""The shipped code a worker runs a task in (data/code_archive.py; executor workers import this: no trio).

A task of a job that ships code runs as `run_in_code(entry, ...)` (data/dependent.py), `entry` its node monitor's
folder of the code (data/code_cache.py). `enter(entry)` puts `entry/py` and then `entry/wd` first on `sys.path`,
makes `entry/wd` the working directory, and takes out of `sys.modules` any module of the same top-level name
imported from elsewhere (the shipped code wins, as it would on a fresh interpreter). The code stays entered
while the task's result or exception is pickled (its classes are then found by name); the next task of any
kind leaves it first (`leave`, which run_task calls while `entered`): `sys.path` and the working directory are
restored, and the modules imported from the entry move out of `sys.modules` into a stash kept for that entry.

- A next task of the same code gets them back from the stash without importing again.
- A task of other code (another archive: a changed file makes one) or of none never sees them: the stash is
  dropped when another entry is entered, and functions a task unpickles are kept per code (shipped.py's cache
  is keyed by the task's user and its entry), so no module of an older archive is ever served again.
- A worker serves one user (services/idle_workers.py), so only that user's code is ever on its path. What a module did
  beyond itself (a C extension loaded: it cannot be unloaded; a registry it filled) stays with the process.

Leaving costs two set operations over `sys.modules`' names and a look at the modules added (tens of
microseconds); a task of a job without code costs one check of `entered`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types

from ..wire.shipped import set_task_user, task_user

entered: str | None = None  # the entry entered (None: none)
_stash_of: str | None = None  # the entry whose modules are in _stash
_stash: dict[str, types.ModuleType] = {}
_before: frozenset[str] = frozenset()  # sys.modules' names when it was entered
_paths: list[str] = []
_cwd = ""
_layouts: dict[str, tuple[list[str], str | None, tuple[str, ...]]] = {}  # entry -> _layout's (it never changes)
LAYOUTS = 64  # entries whose layout a worker keeps


def enter(entry: str) -> None:
    """Enter the code unpacked at `entry` (the module docstring); leave the one entered before, if any."""
    global entered, _stash_of, _before, _paths, _cwd
    if entered is not None:
        leave()
    if _stash_of != entry:
        _stash.clear()
        _stash_of = entry
        importlib.invalidate_caches()
    paths, workdir, names = _layout(entry)
    _drop_shadowed(entry, names)
    _before = frozenset(sys.modules)
    sys.modules.update(_stash)
    sys.path[:0] = paths
    _paths = paths
    _cwd = os.getcwd()
    if workdir is not None:
        os.chdir(workdir)
    entered = entry
    set_task_user(f"{task_user()}\0{entry}")  # functions unpickled from now on are this code's (shipped.py)


def _layout(entry: str) -> tuple[list[str], str | None, tuple[str, ...]]:
    """What of `entry` goes on sys.path (py/, then wd/, those it has), its working directory (None: it has no
    wd/) and the top-level names it provides; looked at once per entry (its files never change)."""
    layout = _layouts.get(entry)
    if layout is None:
        paths = [path for path in (os.path.join(entry, "py"), os.path.join(entry, "wd")) if os.path.isdir(path)]
        workdir = os.path.join(entry, "wd")
        names = {name[:-3] if name.endswith(".py") else name for path in paths for name in os.listdir(path)}
        layout = _layouts[entry] = (paths, workdir if workdir in paths else None, tuple(sorted(names)))
        if len(_layouts) > LAYOUTS:  # entries seen long ago
            del _layouts[next(iter(_layouts))]
    return layout


def leave() -> None:
    """Leave the entered code: its modules into the stash, sys.path and the working directory as they were."""
    global entered
    entry = entered
    if entry is None:
        return
    entered = None
    prefix = entry + os.sep
    for name in sys.modules.keys() - _before:
        module = sys.modules.get(name)
        if module is not None and _from(module, prefix):
            _stash[name] = sys.modules.pop(name)
    for path in _paths:
        with contextlib.suppress(ValueError):  # the task took it off itself
            sys.path.remove(path)
    try:
        os.chdir(_cwd)
    except OSError:  # removed meanwhile: the worker's home will do
        os.chdir(os.path.expanduser("~"))


def _from(module: types.ModuleType, prefix: str) -> bool:
    """Whether `module` was imported from under `prefix` (a package by its folders, a namespace one too)."""
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return file.startswith(prefix)
    path = getattr(module, "__path__", None)
    try:
        return path is not None and any(isinstance(p, str) and p.startswith(prefix) for p in path)
    except Exception:  # a module's own __path__ object that does not iterate
        return False


def _drop_shadowed(entry: str, names: tuple[str, ...]) -> None:
    """Take out of sys.modules the modules (and their submodules) of the top-level `names` the entry provides that
    were imported from elsewhere."""
    prefix = entry + os.sep
    for name in names:
        module = sys.modules.get(name)
        if module is not None and not _from(module, prefix):
            below = name + "."
            for other in [n for n in sys.modules if n == name or n.startswith(below)]:
                del sys.modules[other]
