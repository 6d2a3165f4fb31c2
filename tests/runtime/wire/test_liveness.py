"""The one liveness rule (wire/liveness.py) on fake clocks: a silent peer is taken for dead after its
timeout, a pause of this process is not its silence; and Connection.serve, which both services use,
applies it to every link."""

from __future__ import annotations

import trio
import trio.testing

from sparrow_runtime.wire.connection import Connection
from sparrow_runtime.wire.framing import encode_frames
from sparrow_runtime.wire.liveness import DEFAULT_SCHEDULER_TIMEOUT, HEARTBEATS_PER_TIMEOUT, Liveness
from sparrow_runtime.wire.messages import Heartbeat


def test_liveness_takes_a_silent_peer_for_dead_after_the_timeout():
    live = Liveness(1.0, now=0.0)
    assert live.interval == 0.25
    assert not live.silent(now=0.75, asked=0.75)
    assert not live.silent(now=1.0, asked=1.0)  # exactly the timeout: not yet
    assert live.silent(now=1.25, asked=1.25)
    live.heard = 1.3
    assert not live.silent(now=2.0, asked=2.0)


def test_liveness_forgives_a_pause_of_this_process():
    """A check that wakes 10 s late (this process was stopped) gives the peer a fresh timeout instead
    of dropping it; only silence after that counts."""
    live = Liveness(1.0, now=0.0)
    assert not live.silent(now=10.25, asked=0.25)
    assert not live.silent(now=11.0, asked=11.0)
    assert live.silent(now=11.5, asked=11.5)


def test_a_check_late_by_less_than_an_interval_is_not_a_pause():
    """Being a little late (a busy loop) is not a pause: a silent peer is still dropped."""
    live = Liveness(1.0, now=0.0)
    assert live.silent(now=1.45, asked=1.25)


def test_the_default_scheduler_timeout_is_one_setting_for_clients_and_node_monitors():
    """One default, in one place: the client's and the node monitor's come from wire/liveness.py."""
    from sparrow_runtime.client import core
    from sparrow_runtime.services import node_monitor

    assert core.DEFAULT_SCHEDULER_TIMEOUT is node_monitor.DEFAULT_SCHEDULER_TIMEOUT is DEFAULT_SCHEDULER_TIMEOUT
    assert node_monitor.DEFAULT_HEARTBEAT_INTERVAL == DEFAULT_SCHEDULER_TIMEOUT / HEARTBEATS_PER_TIMEOUT


async def _serve_pair(nursery, idle_timeout: float):
    """A Connection serving one end of a memory stream pair with `idle_timeout`; returns the other
    end (a raw stream) and a dict that gets the serve's `reason` and end time."""
    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, peer_name="peer", handshake=False)
    ended: dict = {}

    async def serve():
        ended["reason"] = await conn.serve(lambda msgs: None, idle_timeout=idle_timeout)
        ended["at"] = trio.current_time()

    nursery.start_soon(serve)
    return theirs, ended


def test_a_served_link_drops_a_peer_silent_past_its_timeout():
    """No message for 2 s: the link ends between 2 s and 2 s + one check interval after the last one."""

    async def main():
        async with trio.open_nursery() as nursery:
            peer, ended = await _serve_pair(nursery, idle_timeout=2.0)
            for _ in range(4):  # heard every 0.5 s until t = 2
                await trio.sleep(0.5)
                await peer.send_all(encode_frames([Heartbeat()]))
            with trio.fail_after(10):
                while "reason" not in ended:
                    await trio.sleep(0.1)
        assert ended["reason"] == "silent for more than 2.0 s"
        assert 4.0 < ended["at"] <= 4.5 + 1e-9

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_served_link_survives_a_pause_of_this_process():
    """This process stops for 3 s (the clock jumps; the peer sent nothing meanwhile) with a 2 s
    timeout: the link is kept, and still ends once the peer is really silent for 2 s after that."""

    async def main():
        async with trio.open_nursery() as nursery:
            _, ended = await _serve_pair(nursery, idle_timeout=2.0)
            await trio.sleep(1.0)
            trio.lowlevel.current_clock().jump(3.0)  # every deadline is now 3 s overdue
            await trio.sleep(1.0)
            assert "reason" not in ended  # at 5 s, 5 s after the last message: kept
            with trio.fail_after(10):
                while "reason" not in ended:
                    await trio.sleep(0.1)
        assert ended["reason"] == "silent for more than 2.0 s"
        assert 6.0 < ended["at"] <= 6.5 + 1e-9  # 2 s after the pause ended, within a check interval

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
