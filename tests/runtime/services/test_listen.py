"""A service that cannot listen says where and why in one line (listen.py), also through serve_*."""

from functools import partial

import pytest
import trio

from sparrow_runtime import ListenError, serve_node_monitor, serve_scheduler
from sparrow_runtime.services.listen import open_listeners


def test_port_in_use_and_foreign_address_are_one_line_errors(taken_port):
    with pytest.raises(ListenError, match=rf"^cannot listen on 127.0.0.1:{taken_port}: Address already in use$"):
        trio.run(open_listeners, "127.0.0.1", taken_port)
    with pytest.raises(ListenError, match=r"^cannot listen on 192.0.2.1:0: Cannot assign requested address$"):
        trio.run(open_listeners, "192.0.2.1", 0)  # TEST-NET-1: no address of this host, nothing is sent
    assert isinstance(ListenError("x"), OSError)  # callers that catch OSError still catch it


@pytest.mark.parametrize("serve", [serve_scheduler, serve_node_monitor])
def test_services_raise_it_before_starting(taken_port, serve):
    with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{taken_port}: Address already in use"):
        trio.run(partial(serve, host="127.0.0.1", port=taken_port, secret="s"))
