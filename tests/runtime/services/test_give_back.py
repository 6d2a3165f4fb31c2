"""Give-back's scheduler side (services/give_back.py) as a collaborator of any host that offers its interface
(GiveBackHost): here a small host of its own, not a SchedulerLogic, so the interface is all it uses."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

import sparrow_core
from sparrow_runtime.errors import ProtocolError
from sparrow_runtime.services.give_back import GiveBacks
from sparrow_runtime.wire.messages import GiveBack


@dataclass
class Job:
    job_id: int
    done: bytearray
    running: dict[int, int] = field(default_factory=dict)
    per_task: bool = False
    task_offsets: np.ndarray | None = None
    task_candidates: np.ndarray | None = None
    prefer: np.ndarray | None = None
    prefer_offsets: np.ndarray | None = None


@dataclass
class Node:
    worker: int
    running: int = 0


class Host:
    """Jobs 1..next_job-1 were issued; job 1 has 3 tasks, all launched (tasks 0 and 1 to worker 7)."""

    def __init__(self) -> None:
        self.table = sparrow_core.TaskTable()
        self.stats: Counter[str] = Counter()
        self.jobs = {1: Job(1, bytearray(3), {0: 7, 1: 7, 2: 8})}
        self.next_job = 3
        self.reprobed: list[int] = []

    def issued(self, job_id: int) -> bool:
        return job_id < self.next_job

    def reprobe_if_starved(self, job: Job, out: list) -> None:
        self.reprobed.append(job.job_id)


def test_a_task_given_back_is_bound_again_and_its_job_reprobed() -> None:
    """A job that had left the table (every task launched) comes back with only the given-back task to launch;
    the node's count drops, and the host is asked to probe again."""
    host, node = Host(), Node(worker=7, running=2)
    GiveBacks(host).take_back(node, GiveBack(1, 1), [])
    assert host.table.unlaunched(1).tolist() == [1]
    assert host.jobs[1].running == {0: 7, 2: 8} and node.running == 1
    assert host.reprobed == [1] and host.stats["given_back"] == 1


def test_a_give_back_for_an_ended_job_or_delivered_task_is_stale() -> None:
    host = Host()
    host.jobs[1].done[0] = 1
    give_backs = GiveBacks(host)
    give_backs.take_back(Node(7), GiveBack(2, 0), [])  # issued, ended
    give_backs.take_back(Node(7), GiveBack(1, 0), [])  # delivered
    assert host.stats["stale_give_backs"] == 2 and 1 not in host.table


@pytest.mark.parametrize(
    ("msg", "worker", "match"),
    [
        (GiveBack(5, 0), 7, "never had"),
        (GiveBack(1, 3), 7, "has 3 tasks"),
        (GiveBack(1, 2), 7, "not launched to this node monitor"),
    ],
)
def test_a_give_back_no_honest_node_sends_is_a_protocol_error_and_changes_nothing(msg, worker, match) -> None:
    host = Host()
    with pytest.raises(ProtocolError, match=match):
        GiveBacks(host).take_back(Node(worker, 2), msg, [])
    assert host.jobs[1].running == {0: 7, 1: 7, 2: 8} and not host.stats
