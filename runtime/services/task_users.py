"""Which OS user a node monitor's worker processes run as (`task_user`): one policy object per node monitor.

- No task user: workers run as the service's own user (ServiceUser). A task can read what that user can,
  the service's key included.
- A name (`"sparrow-task"`): every worker runs as that OS user, its group only, its HOME (OneTaskUser). A
  task cannot read the service's files (mode 0600), but it shares the OS user with every other cluster
  user's tasks on the host: workers are kept apart by process (and made non-dumpable, worker_main.py),
  not by OS permissions.
- A pattern naming `{user}` (`"sparrow-{user}"`): each cluster user's workers run as an OS user of their
  own (TaskUserPerTenant), made by the operator beforehand (`useradd --system sparrow-alice`). A task can
  then neither read nor trace another tenant's workers, nor read the files they write (mode 0600/0700).
  Workers are started for their user (`per_user`): none is fresh.

An OS user is refused if it is root or the service's own user (a task would then run with the service's
rights); a cluster user whose name cannot be an OS user's (empty, a slash, over 32 characters...) gets no
worker. Each refusal is a ValueError naming the user and why: at construction for a name, when a task of
that user comes for a pattern (the task then fails with that reason, and the node monitor goes on).
Switching users needs a node monitor that may (root, or CAP_SETUID, CAP_SETGID and CAP_KILL).
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Callable

PATTERN_FIELD = "{user}"
# what a cluster user's name may be to name an OS user (POSIX's portable user names, as useradd takes them)
_OS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")


class ServiceUser:
    """Workers run as the service's own user: nothing to switch."""

    per_user = False
    spec = None

    def options(self, user: str | None) -> dict:
        return {}


class OneTaskUser:
    """Every worker runs as the OS user `name`."""

    per_user = False

    def __init__(self, name: str) -> None:
        self.spec = name
        self._options = task_user_options(name)

    def options(self, user: str | None) -> dict:
        return self._options


class TaskUserPerTenant:
    """Each cluster user's workers run as the OS user `pattern` names for it (`{user}` replaced)."""

    per_user = True

    def __init__(self, pattern: str) -> None:
        if pattern.count(PATTERN_FIELD) != 1 or "{" in pattern.replace(PATTERN_FIELD, ""):
            raise ValueError(f"task user pattern {pattern!r}: name {PATTERN_FIELD} exactly once, and no other field")
        self.spec = pattern

    def options(self, user: str | None) -> dict:
        if user is None or not _OS_NAME.fullmatch(user):
            raise ValueError(
                f"cluster user {user!r} has no task user under {self.spec!r}: its name cannot be an OS user's"
            )
        return task_user_options(self.spec.replace(PATTERN_FIELD, user))


TaskUsers = ServiceUser | OneTaskUser | TaskUserPerTenant


def task_users(spec: str | None) -> TaskUsers:
    """The policy `task_user` names: None, an OS user's name, or a pattern with {user}. Raises ValueError (a
    name: no such user, root, or the service's own user; a pattern: malformed)."""
    if spec is None:
        return ServiceUser()
    if "{" in spec:
        return TaskUserPerTenant(spec)
    return OneTaskUser(spec)


def task_user_options(name: str) -> dict:
    """What starts a worker process as the OS user `name`: Popen's user, group and extra_groups (none), and
    the HOME, USER and LOGNAME of its environment. Raises ValueError if there is no such user, or it is root
    or this service's own user."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ValueError(f"task user {name!r}: no such user on this host") from None
    if entry.pw_uid == 0:
        raise ValueError(f"task user {name!r} is root: tasks would have every right on this host")
    if entry.pw_uid == os.geteuid():
        raise ValueError(f"task user {name!r} is this service's own user: tasks could read its key and secret")
    env = {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name}
    popen = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    return {"name": entry.pw_name, "env": env, "popen": popen}


def task_user_owner(spec: str | None) -> Callable[[str], tuple[int, int]] | None:
    """Who owns a user's folder of the node monitor's code cache (data/code_cache.py's Owner) when workers run as
    task users (`task_user`): that user's task user; None when workers run as the service's own user."""
    policy = task_users(spec)
    if policy.spec is None:
        return None

    def owner(user: str) -> tuple[int, int]:
        popen = policy.options(user)["popen"]
        return popen["user"], popen["group"]

    return owner
