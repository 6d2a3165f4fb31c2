"""task_users.py: which OS user workers run as, per cluster user; root and the service's own user refused."""

import os
import pwd
import re

import pytest

from sparrow_runtime.services.task_users import OneTaskUser, ServiceUser, TaskUserPerTenant, task_users


def _another_user() -> pwd.struct_passwd:
    """A user of this host that is neither root nor this process's."""
    for entry in pwd.getpwall():
        if entry.pw_uid not in (0, os.geteuid()):
            return entry
    pytest.skip("this host has no user but root and this process's")


def test_no_task_user_runs_workers_as_the_service():
    users = task_users(None)
    assert isinstance(users, ServiceUser) and not users.per_user and users.options("alice") == {}


def test_one_task_user_serves_every_cluster_user():
    entry = _another_user()
    users = task_users(entry.pw_name)
    assert isinstance(users, OneTaskUser) and not users.per_user
    for user in ("alice", "bob", None):
        options = users.options(user)
        assert options["popen"] == {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        assert options["env"]["HOME"] == entry.pw_dir


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("no-such-user-here", "task user 'no-such-user-here': no such user on this host"),
        ("root", "task user 'root' is root"),
    ],
)
def test_a_task_user_that_cannot_be_is_refused_at_once(spec, why):
    with pytest.raises(ValueError, match=why):
        task_users(spec)


def test_the_services_own_user_is_refused(monkeypatch):
    entry = _another_user()
    monkeypatch.setattr(os, "geteuid", lambda: entry.pw_uid)
    with pytest.raises(ValueError, match="is this service's own user"):
        task_users(entry.pw_name)


@pytest.mark.parametrize("pattern", ["sparrow-{user}-{user}", "sparrow-{uid}", "sparrow-{user}{"])
def test_a_malformed_pattern_is_refused(pattern):
    with pytest.raises(ValueError, match=re.escape("name {user} exactly once")):
        task_users(pattern)


def test_a_pattern_names_an_os_user_per_cluster_user():
    entry = _another_user()
    users = task_users("{user}")
    assert isinstance(users, TaskUserPerTenant) and users.per_user
    assert users.options(entry.pw_name)["popen"]["user"] == entry.pw_uid
    with pytest.raises(ValueError, match="task user 'root' is root"):
        users.options("root")  # a cluster user named root gets no root worker
    with pytest.raises(ValueError, match="task user 'sparrow-alice': no such user"):
        task_users("sparrow-{user}").options("alice")


@pytest.mark.parametrize("user", ["", None, "../etc", "a/b", "x" * 33, "-rf", "al ice", "al\nice"])
def test_a_cluster_user_whose_name_cannot_be_an_os_users_gets_no_worker(user):
    with pytest.raises(ValueError, match="cannot be an OS user's"):
        task_users("sparrow-{user}").options(user)
