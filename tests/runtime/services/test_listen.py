"""A service that cannot listen says where and why in one line (listen.py), also through serve_*; services
on Unix sockets ("unix:PATH")."""

import os
import socket
import stat
from functools import partial

import pytest
import trio

from sparrow_runtime import (
    LinkConfig,
    ListenError,
    NodeMonitorConfig,
    SchedulerConfig,
    serve_node_monitor,
    serve_scheduler,
)
from sparrow_runtime.services.listen import open_listeners
from sparrow_runtime.wire.address import format_address, parse_address, unix_path
from sparrow_runtime.wire.handshake import connect


def test_port_in_use_and_foreign_address_are_one_line_errors(taken_port):
    with pytest.raises(ListenError, match=rf"^cannot listen on 127.0.0.1:{taken_port}: Address already in use$"):
        trio.run(open_listeners, "127.0.0.1", taken_port)
    with pytest.raises(ListenError, match=r"^cannot listen on 192.0.2.1:0: Cannot assign requested address$"):
        trio.run(open_listeners, "192.0.2.1", 0)  # TEST-NET-1: no address of this host, nothing is sent
    assert isinstance(ListenError("x"), OSError)  # callers that catch OSError still catch it


@pytest.mark.parametrize(
    "serve",
    [
        lambda port: serve_scheduler(SchedulerConfig(link=LinkConfig(secret="s"), host="127.0.0.1", port=port)),
        lambda port: serve_node_monitor(NodeMonitorConfig(link=LinkConfig(secret="s"), host="127.0.0.1", port=port)),
    ],
    ids=["scheduler", "node-monitor"],
)
def test_services_raise_it_before_starting(taken_port, serve):
    with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{taken_port}: Address already in use"):
        trio.run(serve, taken_port)


def test_unix_address_is_parsed_formatted_and_checked():
    """ "unix:PATH" is its own address (port 0), round-trips through the text form, and an empty or
    too-long path is refused naming the problem."""
    assert parse_address("unix:/run/s.sock") == ("unix:/run/s.sock", 0)
    assert parse_address(("unix:/run/s.sock", 0)) == ("unix:/run/s.sock", 0)
    assert format_address(parse_address("unix:/run/s.sock")) == "unix:/run/s.sock"
    assert unix_path(("unix:/run/s.sock", 0)) == "/run/s.sock" and unix_path(("127.0.0.1", 7077)) is None
    with pytest.raises(ValueError, match="needs a path"):
        parse_address("unix:")
    with pytest.raises(ValueError, match="longer than 107 bytes"):
        parse_address("unix:/" + "x" * 200)


def test_scheduler_on_a_unix_socket_serves_direct_writes_and_removes_its_socket(tmp_path):
    """A scheduler listening on unix:PATH reports that address, its socket is this user's only (0600), an
    authenticated connection to it takes the direct-write path (os.write on the socket's fd), and the
    socket file is gone once the scheduler stops."""
    path = str(tmp_path / "s.sock")

    async def main():
        async with trio.open_nursery() as nursery:
            address = await nursery.start(
                partial(serve_scheduler, SchedulerConfig(link=LinkConfig(secret="s"), host="unix:" + path))
            )
            assert address == ("unix:" + path, 0)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            conn = await connect(address, link=LinkConfig(secret=b"s"), role="client", peer_id="t")
            assert conn._fd is not None  # the fast path: bursts written straight to the socket
            await conn.aclose()
            nursery.cancel_scope.cancel()
        assert not os.path.exists(path)

    trio.run(main)


def test_stale_unix_socket_is_replaced_and_a_live_or_foreign_file_refused(tmp_path):
    """A socket file nothing listens on (a dead service's) is replaced; one a live service listens on,
    and a file that is not a socket, are one-line ListenErrors and are left as they were."""
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(path)  # bound, never listening: as a killed service leaves it

    async def main():
        (listener,) = await open_listeners("unix:" + path, 0)
        with pytest.raises(ListenError, match=rf"^cannot listen on unix:{path}: another process listens on it$"):
            await open_listeners("unix:" + path, 0)
        await listener.aclose()

    trio.run(main)
    other = tmp_path / "file"
    other.write_text("keep me")
    with pytest.raises(ListenError, match="a file that is not a socket is in the way"):
        trio.run(open_listeners, f"unix:{other}", 0)
    assert other.read_text() == "keep me"
