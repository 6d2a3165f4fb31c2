"""The client keeps to its link's frame limit (logic.py `flush`): the limit is the smaller of the
client's max_frame and the scheduler's (told at the handshake, given to `connected`); a job that
would be over it is sent as several, and a task over it by itself fails alone, once, naming its size
and the limit. Sans-I/O: the client logic alone."""

from __future__ import annotations

from sparrow_runtime import TaskFailed
from sparrow_runtime.client.job import Job, build_submit
from sparrow_runtime.client.logic import ClientLogic
from sparrow_runtime.wire.messages import TOO_LARGE


def test_a_job_over_the_links_limit_goes_in_parts_and_a_task_over_it_fails_alone():
    """Client 100,000 bytes, scheduler 10,000: tasks of 4,000, 4,000, 20,000 and 4,000 bytes go as two
    jobs (the first two, then the last); the 20,000-byte task fails at once with TaskFailed naming
    20000 and 10000."""
    logic = ClientLogic(max_frame=100_000)
    logic.connected("127.0.0.1:7077", 0.0, 10_000)
    payloads = [b"a" * 4000, b"b" * 4000, b"c" * 20_000, b"d" * 4000]
    msg = build_submit(payloads, "", 0, None, None, 100_000)
    job = Job(msg, msg.tasks)
    logic.add(job)
    sent = logic.flush()
    assert [m.tasks for m in sent] == [payloads[:2], payloads[3:]]
    assert job.outcomes[2].failure == TOO_LARGE and job.attempts == [1, 1, 1, 1]
    error = job.exception(2)
    assert isinstance(error, TaskFailed)
    assert "payload of 20000 bytes is over the frame limit of 10000 bytes of the link to scheduler" in str(error)


def test_the_links_limit_follows_each_scheduler_the_client_connects_to():
    """After a failover to a scheduler with a larger max_frame the client's own is the limit again."""
    logic = ClientLogic(max_frame=50_000)
    logic.connected("a:1", 0.0, 10_000)
    assert logic.frame_limit == 10_000
    logic.lost("gone", 1.0)
    logic.connected("b:1", 2.0, 1 << 30)
    assert logic.frame_limit == 50_000
