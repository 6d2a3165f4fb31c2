"""A dependent task whose inputs travel as references, as the client packs it and the node monitor reads it."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from sparrow_runtime.data.dependent import (
    Slot,
    call_with_inputs,
    is_remote,
    pack_dependent,
    unpack_remote,
    worker_payload,
)
from sparrow_runtime.errors import ProtocolError
from sparrow_runtime.wire.messages import ValueRef
from sparrow_runtime.wire.task_codec import pack_task, run_task, unpack_outcome


def _sub(a, b):
    return a - b


REF = ValueRef("nm-1", "127.0.0.1:9", b"k" * 16, 123)


def test_inputs_all_inline_make_the_call_a_worker_runs_as_before():
    """Without references the payload is the cloudpickled call_with_inputs (no fetch, one byte tells)."""
    template = pack_task(_sub, (Slot(0), Slot(1)))
    payload = pack_dependent(template, [pickle.dumps(10), pickle.dumps(3)])
    assert not is_remote(payload)
    fn, _, _ = cloudpickle.loads(payload)
    assert fn is call_with_inputs and unpack_outcome(run_task(payload)) == 7


def test_a_reference_among_the_inputs_makes_a_remote_call_that_the_node_monitor_completes():
    """With a reference, the payload is REMOTE_MARK + msgpack: the node monitor reads its template and inputs
    (pickled values and references, in order) and, with every value fetched, makes the worker's call."""
    template = pack_task(_sub, (Slot(0), Slot(1)))
    payload = pack_dependent(template, [pickle.dumps(10), REF])
    assert is_remote(payload)
    call = unpack_remote(payload)
    assert call.template == template and call.inputs == [pickle.dumps(10), REF]
    assert unpack_outcome(run_task(worker_payload(call.template, [pickle.dumps(10), pickle.dumps(4)]))) == 6


@pytest.mark.parametrize("garbage", [b"R", b"R\x93\x01", b"R" + b"\xff" * 20])
def test_a_remote_call_that_does_not_decode_is_a_protocol_error(garbage):
    """A payload marked remote that is not a valid RemoteCall: ProtocolError (the task fails, nothing else)."""
    with pytest.raises(ProtocolError, match="invalid task with remote inputs"):
        unpack_remote(garbage)
