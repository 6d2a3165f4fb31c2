"""The task history through a real cluster (LocalCluster: scheduler and node monitor processes on TLS): alice,
bob and the cluster's admin ask `Client.tasks` and `sparrow tasks`; each user sees only their own tasks."""

import json
import time
from functools import partial

import pytest
import trio

from sparrow_runtime import Client, LocalCluster, NodeMonitorConfig
from sparrow_runtime.cli.main import main
from sparrow_runtime.wire import certs
from sparrow_runtime.wire.tls import TLS


def _fails(x):
    raise KeyError(f"no such key {x}")


def _user_tls(folder, name):
    return TLS(folder / "ca.pem", folder / f"{name}.pem", folder / f"{name}-key.pem")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A cluster whose jobs ran: alice's job 3 tasks ok and one raising, bob's one raising; yields the cluster,
    its TLS folder and the job ids {(user, "ok" | "failing"): id}."""
    folder = tmp_path_factory.mktemp("tls")
    thread = NodeMonitorConfig(executor="thread")
    with LocalCluster(schedulers=1, node_monitors=1, slots=1, node_monitor=thread, dashboard=False, tls=folder) as c:
        for name in ("alice", "bob"):
            certs.issue(folder, name, "client")

        async def run_jobs():
            jobs = {}
            for name in ("alice", "bob"):
                async with Client(c.schedulers, tls=_user_tls(folder, name)) as client:
                    if name == "alice":
                        ok = await client.submit_job([partial(abs, -i) for i in range(3)])
                        await ok.results()
                        jobs[name, "ok"] = ok.job_id
                    failing = await client.submit_job([partial(_fails, name)], retries=0)
                    await failing.wait()
                    jobs[name, "failing"] = failing.job_id
            return jobs

        yield c, folder, trio.run(run_jobs)


def _tasks(c, tls, **query):
    async def ask():
        async with Client(c.schedulers, tls=tls) as client:
            return await client.tasks(**query)

    return trio.run(ask)


def test_a_user_sees_only_their_own_tasks_and_the_admin_sees_everyones(cluster):
    c, folder, jobs = cluster
    alice = _tasks(c, _user_tls(folder, "alice"))
    assert sorted((r.job_id, r.state) for r in alice) == sorted(
        [(jobs["alice", "ok"], "ok")] * 3 + [(jobs["alice", "failing"], "raised")]
    )
    assert {r.user for r in alice} == {"alice"} and {r.node for r in alice} == {c.node_ids[0]}
    assert all(r.attempts == 1 and r.run_time >= 0 and r.queue_wait >= 0 for r in alice)
    assert _tasks(c, _user_tls(folder, "alice"), user="bob") == []  # bob's tasks are not alice's to see
    assert _tasks(c, _user_tls(folder, "bob"), job=jobs["alice", "failing"]) == []
    everyone = _tasks(c, c.client_tls)
    assert sorted(r.user for r in everyone) == ["alice"] * 4 + ["bob"]
    assert [r.user for r in _tasks(c, c.client_tls, user="bob")] == ["bob"]


def test_failed_job_and_since_filters(cluster):
    c, folder, jobs = cluster
    (failed,) = _tasks(c, _user_tls(folder, "alice"), failed=True)
    assert (failed.job_id, failed.state, failed.error) == (
        jobs["alice", "failing"],
        "raised",
        "KeyError: 'no such key alice'",
    )
    assert {r.task for r in _tasks(c, c.client_tls, job=jobs["alice", "ok"])} == {0, 1, 2}
    assert len(_tasks(c, c.client_tls, since=600)) == 5
    time.sleep(0.3)
    assert _tasks(c, c.client_tls, since=0.2) == []  # every task ended before that


def test_sparrow_tasks_prints_a_users_failed_tasks_as_json_and_a_table(cluster, capsys):
    c, folder, jobs = cluster
    tls = [
        "--tls-ca",
        str(folder / "ca.pem"),
        "--tls-cert",
        str(folder / "bob.pem"),
        "--tls-key",
        str(folder / "bob-key.pem"),
    ]
    assert main(["tasks", "--scheduler", c.schedulers[0], *tls, "--failed", "--since", "10m", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["user"], row["job_id"], row["state"]) == ("bob", jobs["bob", "failing"], "raised")
    assert main(["tasks", "--scheduler", c.schedulers[0], *tls, "--user", "alice"]) == 0
    assert "0 tasks" in capsys.readouterr().out  # alice's tasks are not bob's to see


def test_a_bad_since_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["tasks", "--since", "soon"])
    assert exit_.value.code == 2
    assert "is not a duration" in capsys.readouterr().err


@pytest.mark.parametrize(
    "query, match", [({"since": -1}, "since must be"), ({"limit": 0}, "limit must be"), ({"job": -2}, "job must be")]
)
def test_a_bad_filter_is_refused_by_the_client_and_the_connection_stays(cluster, query, match):
    c, _, _ = cluster

    async def ask():
        async with Client(c.schedulers, **c.credentials) as client:
            with pytest.raises(ValueError, match=match):
                await client.tasks(**query)
            return len(await client.tasks())

    assert trio.run(ask) == 5
