"""Per-user task metrics (user_metrics.py): tasks by user and outcome and a run-time histogram by user, read from
the task history after each batch with outcomes: every task counted once, the first `max_users` users labelled
and the rest "other" (no name past the bound held), tasks that never ran without a run time; and through a real
scheduler's /metrics endpoint (a LocalCluster), users' ok, failed and cancelled tasks."""

from __future__ import annotations

import time
import urllib.request
from functools import partial

import prometheus_client
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from sparrow_runtime import Client, LocalCluster, SchedulerConfig
from sparrow_runtime.services.metrics import MeteredSchedulerLogic
from sparrow_runtime.services.task_history import TaskEntry, TaskHistory
from sparrow_runtime.services.user_metrics import OTHER, UserTaskMetrics, check_metrics_users
from sparrow_runtime.wire.messages import CANCELLED, SYSTEM, GetTask, Outcome, OutcomeToScheduler, RegisterNodeMonitor
from sparrow_runtime.wire.messages import SubmitJob as Submit


def entry(user, ok=True, failure=0, node="nm", run=0.02):
    return TaskEntry(1, 0, user, ok, failure, "", node, 1, 0.0, 1.0, 1.0 + run)


def counted(registry):
    """{(user, outcome): tasks} and {user: (run-time count, sum, {le: cumulative})} from `registry`."""
    tasks, runs = {}, {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "sparrow_user_tasks_total":
                tasks[(sample.labels["user"], sample.labels["outcome"])] = sample.value
            elif sample.name.startswith("sparrow_user_task_run_seconds"):
                buckets = runs.setdefault(sample.labels["user"], [0, 0.0, {}])[2]
                if sample.name.endswith("_count"):
                    runs[sample.labels["user"]][0] = sample.value
                elif sample.name.endswith("_sum"):
                    runs[sample.labels["user"]][1] = sample.value
                elif sample.name.endswith("_bucket"):
                    buckets[sample.labels["le"]] = sample.value
    return tasks, runs


def metered(max_users=2, max_records=100):
    history = TaskHistory(max_records=max_records)
    users = UserTaskMetrics(history, max_users)
    registry = prometheus_client.CollectorRegistry()
    registry.register(users)
    return history, users, registry


def test_each_task_is_counted_once_by_user_and_outcome_with_its_run_time():
    history, users, registry = metered()
    history.add(entry("alice"))
    history.add(entry("alice", ok=False, failure=0))  # it raised
    users.count()
    users.count()  # nothing new: nothing counted again
    history.add(entry("alice", ok=False, failure=CANCELLED, node=""))  # cancelled before it ran
    history.add(entry("alice", ok=False, failure=SYSTEM, run=2.0))  # its node monitor was lost
    users.count()
    tasks, runs = counted(registry)
    assert tasks == {("alice", "ok"): 1, ("alice", "failed"): 2, ("alice", "cancelled"): 1}
    count, total, buckets = runs["alice"]
    assert count == 3 and total == pytest.approx(2.04)  # the cancelled one never ran
    assert (buckets["0.01"], buckets["0.05"], buckets["1.0"], buckets["5.0"], buckets["+Inf"]) == (0, 2, 2, 3, 3)


def test_the_first_users_get_labels_and_the_rest_are_other_without_their_names_held():
    history, users, registry = metered(max_users=2)
    for name in ("alice", "", "bob", "carol", "alice", "bob"):
        history.add(entry(name))
    users.count()
    tasks, runs = counted(registry)
    assert tasks == {
        **{("alice", o): n for o, n in (("ok", 2), ("failed", 0), ("cancelled", 0))},
        **{("", o): n for o, n in (("ok", 1), ("failed", 0), ("cancelled", 0))},
        **{(OTHER, o): n for o, n in (("ok", 3), ("failed", 0), ("cancelled", 0))},
    }
    assert set(runs) == {"alice", "", OTHER} and runs[OTHER][0] == 3
    assert set(users.users) == {"alice", ""}  # bob and carol's names are not kept
    for i in range(1000):  # a flood of names adds no label and holds none of them
        history.add(entry(f"u{i}"))
        users.count()
    assert set(users.users) == {"alice", ""} and counted(registry)[0][(OTHER, "ok")] == 1003


def test_no_other_series_until_a_user_past_the_bound_ends_a_task_and_zero_labels_all_other():
    history, users, registry = metered(max_users=5)
    history.add(entry("alice"))
    users.count()
    assert {user for user, _ in counted(registry)[0]} == {"alice"}
    history, users, registry = metered(max_users=0)
    history.add(entry("alice"))
    users.count()
    assert counted(registry)[0][(OTHER, "ok")] == 1


def test_entries_the_history_dropped_since_do_not_hide_the_new_ones():
    """The newest counted entry left the history (its cap): every entry there now is new, and counted once."""
    history, users, registry = metered(max_records=3)
    history.add(entry("alice"))
    users.count()
    for _ in range(3):
        history.add(entry("alice"))
    users.count()
    assert counted(registry)[0][("alice", "ok")] == 4


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_bound_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="metrics_users must be an int >= 0"):
        check_metrics_users(bad)
    with pytest.raises(ValueError, match="metrics_users"):
        SchedulerConfig(metrics_users=bad)


def test_the_metered_scheduler_counts_its_users_tasks():
    """Through MeteredSchedulerLogic: a job of user u, one task ok and one failed, both counted at their outcomes."""
    registry = prometheus_client.CollectorRegistry()
    logic = MeteredSchedulerLogic(registry, metrics_users=4, scheduler_id="s", seed=3, bind_idle=False)
    logic.on_node_messages("nm", [RegisterNodeMonitor("a", 2)])
    logic.on_client_messages("c", [Submit(1, [b"x", b"y"], user="u")])
    job_id = next(iter(logic.jobs))
    logic.on_node_messages("nm", [GetTask(job_id), GetTask(job_id)])
    logic.on_node_messages(
        "nm", [OutcomeToScheduler(job_id, 0, Outcome(True)), OutcomeToScheduler(job_id, 1, Outcome(False, b"", "x"))]
    )
    tasks, runs = counted(registry)
    assert (tasks[("u", "ok")], tasks[("u", "failed")], runs["u"][0]) == (1, 1, 2)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _fail() -> None:
    raise RuntimeError("no")


@pytest.mark.slow
def test_a_real_schedulers_metrics_endpoint_counts_each_users_tasks_by_outcome():
    """A LocalCluster whose scheduler labels 2 users: alice runs 3 tasks of 0.05 s, bob one that raises and one
    cancelled while it runs, carol one task (past the bound: "other"); /metrics says so, with alice's run
    times in their buckets (each ran 0.05 s, and waited at most a few seconds for a worker)."""

    async def main(cluster: LocalCluster) -> None:
        async with Client(cluster.schedulers, secret=cluster.secret) as client:
            alice = await client.submit_job([partial(_sleep, 0.05)] * 3, user="alice")
            await alice.outcomes()
            failing = await client.submit_job([_fail], user="bob")
            await failing.outcomes()
            long = await client.submit_job([partial(_sleep, 30.0)], user="bob")
            await trio.sleep(1.0)  # it runs
            long.cancel(force=True)
            await long.outcomes()
            carol = await client.submit_job([partial(_sleep, 0.0)], user="carol")
            await carol.outcomes()

    with LocalCluster(node_monitors=1, scheduler=SchedulerConfig(metrics_users=2)) as cluster:
        trio.run(main, cluster)
        (url,) = [cluster.metrics_urls[address] for address in cluster.schedulers]
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("sparrow_user_")
    }

    def tasks(user, outcome):
        return samples[("sparrow_user_tasks_total", (("outcome", outcome), ("user", user)))]

    def run(user, suffix, le=None):
        labels = (("le", le), ("user", user)) if le else (("user", user),)
        return samples[(f"sparrow_user_task_run_seconds_{suffix}", labels)]

    assert (tasks("alice", "ok"), tasks("alice", "failed"), tasks("alice", "cancelled")) == (3, 0, 0)
    assert (tasks("bob", "ok"), tasks("bob", "failed"), tasks("bob", "cancelled")) == (0, 1, 1)
    assert (tasks(OTHER, "ok"), tasks(OTHER, "failed")) == (1, 0)
    # run time counts from the task's handing to its node monitor (where it may wait bound behind another)
    assert run("alice", "count") == 3 and run("alice", "bucket", "0.01") == 0 and run("alice", "bucket", "10.0") == 3
    assert run("alice", "sum") >= 0.15
    assert run(OTHER, "count") == 1
    assert not any(dict(labels).get("user") == "carol" for _, labels in samples)
