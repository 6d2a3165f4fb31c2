"""A task that takes other tasks' results, as it travels and as it runs (executor workers import this: no trio).

A dependent task runs as `call_with_inputs(template, inputs)`: `template` is the pickled `(fn, args, kwargs)`
with each input replaced by a `Slot`, `inputs` the pickled values (as the upstream outcomes brought
them: never unpickled and pickled again on the way). An input over its node monitor's inline limit
stays there: the client then sends the task as REMOTE_MARK + msgpack(RemoteCall), whose inputs are
pickled values or references (ValueRef), and the node monitor that runs it fetches each referenced
value (from its own store, or from the holder) and makes the call with every value in it
(`worker_payload`) before a worker sees it. A cloudpickled payload starts with the PROTO opcode
(0x80), never with REMOTE_MARK, so one byte tells them apart.
"""

from __future__ import annotations

from typing import Annotated, Any

import cloudpickle
import msgspec

from ..errors import ProtocolError
from ..wire import code_env
from ..wire.limits import MAX_INPUTS
from ..wire.messages import ValueRef
from ..wire.task_codec import pack_task
from . import packed

CONTAINERS = (list, tuple, set, frozenset)
REMOTE_MARK = b"R"


class Slot:
    """Stands for input `index` in a dependent task's template."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __reduce__(self) -> tuple[type[Slot], tuple[int]]:
        return Slot, (self.index,)

    def __eq__(self, other: object) -> bool:
        return type(other) is Slot and other.index == self.index

    def __hash__(self) -> int:
        return hash((Slot, self.index))

    def __repr__(self) -> str:
        return f"Slot({self.index})"


def fill(obj: Any, values: list) -> Any:
    """`obj` with every Slot replaced by its value (the containers find_inputs walks, rebuilt)."""
    kind = type(obj)
    if kind is Slot:
        return values[obj.index]
    if kind is dict:
        return {k: fill(v, values) for k, v in obj.items()}
    if kind in CONTAINERS:
        return kind([fill(v, values) for v in obj])
    return obj


def call_with_inputs(template: bytes, inputs: list[bytes]) -> Any:
    """Run a dependent task: unpickle its call and its inputs' values, put the values in, call."""
    fn, args, kwargs = cloudpickle.loads(template)
    values = [packed.loads(payload) for payload in inputs]
    return fn(*fill(args, values), **fill(kwargs, values))


def run_in_code(entry: str, template: bytes, inputs: list[bytes] | None = None) -> Any:
    """Run a task of a job that ships code: enter the code unpacked at `entry` (wire/code_env.py), then make the call
    of `template` with `inputs` (as call_with_inputs), its functions and classes imported from that code."""
    code_env.enter(entry)
    return call_with_inputs(template, [] if inputs is None else inputs)


class CodeRef(msgspec.Struct, array_like=True, gc=False):
    """The code a job ships (code_archive.py): its archive's upload, to fetch it by, and the archive's SHA-256,
    which names it (the node monitor checks the bytes it fetched against it)."""

    ref: ValueRef
    digest: Annotated[bytes, msgspec.Meta(min_length=32, max_length=32)]


class RemoteCall(msgspec.Struct, array_like=True, gc=False):
    """A dependent task some of whose inputs are references, or a task of a job that ships `code` (module
    docstring)."""

    template: bytes
    inputs: Annotated[list[bytes | ValueRef], msgspec.Meta(max_length=MAX_INPUTS)]
    code: CodeRef | None = None


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(RemoteCall)


def pack_dependent(template: bytes, inputs: list[bytes | ValueRef], code: CodeRef | None = None) -> bytes:
    """The task payload that runs `template` with `inputs` (pickled values, or references to fetch first), in
    `code` if the job ships some (its node monitor fetches and unpacks it first)."""
    if code is not None or any(type(value) is ValueRef for value in inputs):
        return REMOTE_MARK + _encoder.encode(RemoteCall(template, inputs, code))
    return pack_task(call_with_inputs, (template, inputs))


def with_code(payload: bytes, code: CodeRef) -> bytes:
    """A task's payload (pack_task's: a pickled call, which is a template without inputs) to run in `code`."""
    return REMOTE_MARK + _encoder.encode(RemoteCall(payload, [], code))


def is_remote(payload: bytes) -> bool:
    return payload[:1] == REMOTE_MARK


def unpack_remote(payload: bytes) -> RemoteCall:
    """The RemoteCall of a payload for which `is_remote` is true. ProtocolError if it is not a valid one."""
    try:
        return _decoder.decode(memoryview(payload)[1:])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProtocolError(f"invalid task with remote inputs: {exc}") from None


def worker_payload(template: bytes, values: list | None = None, entry: str | None = None) -> bytes:
    """The payload a worker runs: the call of `template` with every input's pickled value in it, or (no
    `values`) without them, for an executor that passes them to the call itself (run_task's `inputs`):
    a big value is then not pickled again. `entry`: the folder of the job's code, run in it (run_in_code)."""
    if entry is not None:
        return pack_task(run_in_code, (entry, template) if values is None else (entry, template, values))
    return pack_task(call_with_inputs, (template,) if values is None else (template, values))
