"""Under TLS a node monitor fetches a value only for a task of the value's user (server.py, links.py): it names
the task's user, the holder sends the value only if it is that user's, and a copy kept for one user's tasks
(copies.py) is never given to another's. Real links on loopback with the test CA's certificates."""

from __future__ import annotations

from functools import partial

import pytest
import trio

from sparrow_runtime.data.links import DataLinks
from sparrow_runtime.data.server import DataServer
from sparrow_runtime.data.shared import AVAILABLE
from sparrow_runtime.data.store import ValueStore
from sparrow_runtime.errors import ValueLost
from sparrow_runtime.wire.link_config import LinkConfig
from sparrow_runtime.wire.messages import ValueRef

SIZE = 100_000


async def _fetches(certs) -> dict:
    store = ValueStore(1 << 30)
    key = store.put(b"a" * SIZE, "alice", "alice's session")
    server = DataServer(store, node_id="nm0", link=LinkConfig(tls=certs.tls("nm0")))
    seen: dict = {}
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle_stream, 0, host="127.0.0.1"))
        ref = ValueRef("nm0", f"127.0.0.1:{listeners[0].socket.getsockname()[1]}", key, SIZE)
        link = LinkConfig(tls=certs.tls("nm1"))
        links = DataLinks(link=link, role="node-monitor", peer_id="nm1", shared_over=1000, copies=1 << 20)
        with trio.fail_after(20):
            for user in ("alice", "bob", "alice", "bob"):  # alice's second from her copy; bob's never
                try:
                    seen.setdefault(user, []).append(len(await links.fetch(ref, user)))
                except ValueLost as exc:
                    seen.setdefault(user, []).append(str(exc))
        seen["copy hits"] = 0 if links.copies is None else links.copies.hits
        await links.aclose()
        nursery.cancel_scope.cancel()
    return seen


def test_a_node_monitor_gets_a_value_only_for_a_task_of_its_user(cluster_certs):
    seen = trio.run(_fetches, cluster_certs)
    assert seen["alice"] == [SIZE, SIZE]
    assert all("holds no such value" in why and "another user's" in why for why in seen["bob"]), seen["bob"]
    if AVAILABLE:  # memory files: alice's second fetch took her copy
        assert seen["copy hits"] == 1


@pytest.mark.skipif(not AVAILABLE, reason="copies are kept as memory files only")
def test_a_copy_is_given_only_to_tasks_of_the_user_it_was_fetched_for():
    from sparrow_runtime.data.copies import Copies
    from sparrow_runtime.data.shared import share

    copies = Copies(1 << 20)
    value = share(b"v" * 100)
    assert copies.put("nm0:1", b"k" * 16, value, 0.0, "alice")
    assert copies.get("nm0:1", b"k" * 16, 100, 1.0, "bob") is None
    assert copies.get("nm0:1", b"k" * 16, 100, 1.0, None) is None
    assert copies.get("nm0:1", b"k" * 16, 100, 1.0, "alice") is value
