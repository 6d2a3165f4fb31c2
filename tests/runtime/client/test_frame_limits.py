"""The client keeps to its link's frame limit (core.py `_place`): a job that would be over the
smaller max_frame of the client and its scheduler is sent as several jobs, and a task over it by
itself fails alone, once, naming its size and the limit. No network: a fake connection."""

from __future__ import annotations

import trio

from sparrow_runtime import Client, TaskFailed
from sparrow_runtime.client.core import build_submit
from sparrow_runtime.wire.messages import SubmitJob


class _Link:
    """What `_place` uses of a connection, recording what is sent."""

    peer_name = "127.0.0.1:7077"

    def __init__(self, send_limit: int) -> None:
        self.send_limit = send_limit
        self.sent: list = []

    def send_later(self, msgs) -> None:
        self.sent.extend(msgs)


def test_a_job_over_the_links_limit_goes_in_parts_and_a_task_over_it_fails_alone():
    """Limit 10,000 bytes: tasks of 4,000, 4,000, 20,000 and 4,000 bytes go as two jobs (the first
    two, then the last); the 20,000-byte task fails at once with TaskFailed naming 20000 and 10000."""

    async def main():
        client = Client(["127.0.0.1:7077"], secret="s")
        link = client._conn = _Link(10_000)
        payloads = [b"a" * 4000, b"b" * 4000, b"c" * 20_000, b"d" * 4000]
        handle = client.send_job(build_submit(payloads, "", 0, None, None))
        assert [type(m) for m in link.sent] == [SubmitJob, SubmitJob]
        assert [m.tasks for m in link.sent] == [payloads[:2], payloads[3:]]
        outcome = handle._outcome(2)
        assert isinstance(outcome.exception, TaskFailed) and outcome.attempts == 1
        assert "payload of 20000 bytes is over the frame limit of 10000 bytes" in str(outcome.exception)
        assert handle.attempts == [1, 1, 1, 1]

    trio.run(main)
