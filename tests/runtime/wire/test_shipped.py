"""wire/shipped.py through task_codec: a function pickled by value is pickled once and unpickled once for many tasks,
a change of what it reads is seen, and both caches stay bounded."""

from __future__ import annotations

import io
import pickle
import pickletools

import cloudpickle
import pytest

from sparrow_runtime.wire import shipped
from sparrow_runtime.wire.task_codec import TaskPacker, pack_task, run_task, unpack_outcome

OFFSET = 1


@pytest.fixture(autouse=True)
def empty_caches() -> None:
    shipped._sent.clear()
    shipped._loaded.clear()
    shipped._loaded_bytes = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often cloudpickle pickles and unpickles a function on its own (not a task's whole call)."""
    calls = {"dumps": 0, "loads": 0}
    dumps, loads = cloudpickle.dumps, cloudpickle.loads

    def counting_dumps(obj: object, *args: object, **kwargs: object) -> bytes:
        calls["dumps"] += callable(obj)
        return dumps(obj, *args, **kwargs)

    def counting_loads(data: bytes, *args: object, **kwargs: object) -> object:
        out = loads(data, *args, **kwargs)
        calls["loads"] += callable(out)
        return out

    monkeypatch.setattr(shipped.cloudpickle, "dumps", counting_dumps)
    monkeypatch.setattr(shipped.cloudpickle, "loads", counting_loads)
    return calls


def _value(payload: bytes) -> object:
    return unpack_outcome(run_task(payload))


def _by_value():
    """A function cloudpickle pickles by value (a nested one, as a script's `__main__` functions are)."""

    def add_offset(x: int) -> int:
        return x + OFFSET

    return add_offset


def test_a_function_by_value_is_pickled_once_and_unpickled_once_for_many_tasks(counted: dict[str, int]) -> None:
    """Three tasks of the same function: one pickle of it at the sender, one unpickle at the receiver, right values."""
    fn = _by_value()
    payloads = [pack_task(fn, (x,)) for x in range(3)]
    assert [_value(p) for p in payloads] == [1, 2, 3]
    assert counted == {"dumps": 1, "loads": 1}


def test_a_rebound_global_is_seen_by_the_next_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sender's entry holds only while the globals the function names are the same objects: `OFFSET = 10` after
    a first task makes the next task add 10."""
    fn = _by_value()
    assert _value(pack_task(fn, (1,))) == 2
    monkeypatch.setitem(globals(), "OFFSET", 10)
    assert _value(pack_task(fn, (1,))) == 11


def test_a_changed_default_or_closure_is_seen() -> None:
    """New defaults and a closure cell bound to a new object pickle afresh."""
    scale = 2

    def times(x: int, plus: int = 0) -> int:
        return x * scale + plus

    assert _value(pack_task(times, (3,))) == 6
    times.__defaults__ = (1,)
    assert _value(pack_task(times, (3,))) == 7
    scale = 3
    assert _value(pack_task(times, (3,))) == 10


def test_functions_from_a_module_are_not_shipped_by_value(counted: dict[str, int]) -> None:
    """A function importable by name goes by reference as before: neither cache holds it."""
    import os.path

    assert _value(pack_task(abs, (-4,))) == 4 and _value(pack_task(os.path.basename, ("a/b",))) == "b"
    assert counted == {"dumps": 0, "loads": 0} and not shipped._sent and not shipped._loaded


def test_both_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past their bounds the least recently used go: the sender keeps SENDER_FUNCTIONS functions, the receiver
    RECEIVER_FUNCTIONS and at most RECEIVER_BYTES."""
    monkeypatch.setattr(shipped, "SENDER_FUNCTIONS", 3)
    monkeypatch.setattr(shipped, "RECEIVER_FUNCTIONS", 4)
    functions = [_by_value() for _ in range(6)]
    for fn in functions:
        assert _value(pack_task(fn, (0,))) == 1
    assert list(shipped._sent) == functions[-3:]
    # the six pickles are equal in content (the same code and globals): one entry at the receiver
    assert len(shipped._loaded) == 1
    distinct = [eval(f"lambda x: x + {i}") for i in range(6)]
    for i, fn in enumerate(distinct):
        assert _value(pack_task(fn, (0,))) == i
    assert len(shipped._loaded) == 4 and shipped._loaded_bytes == sum(len(data) for _, data in shipped._loaded)
    monkeypatch.setattr(shipped, "RECEIVER_BYTES", len(next(iter(shipped._loaded))[1]) + 1)
    assert _value(pack_task(distinct[0], (5,))) == 5
    assert len(shipped._loaded) == 1


def test_the_receiver_keeps_each_users_functions_apart() -> None:
    """The same bytes run for two users (a thread executor runs every user's tasks in one process): each gets a
    function of their own, so what one user's calls keep (a mutable default) is not another's."""

    def calls_so_far(seen: list = []) -> int:  # noqa: B006 (the state that shows which function ran)
        seen.append(1)
        return len(seen)

    payload = pack_task(calls_so_far)
    alice = [unpack_outcome(run_task(payload, user="alice")) for _ in range(2)]
    bob = unpack_outcome(run_task(payload, user="bob"))
    assert alice == [1, 2] and bob == 1
    assert unpack_outcome(run_task(payload, user="alice")) == 3


def test_an_unpicklable_function_is_refused_naming_it() -> None:
    """A function whose closure holds what cannot be pickled: TypeError naming the function, as before."""
    import threading

    lock = threading.Lock()

    def holds_a_lock() -> bool:
        return lock.locked()

    with pytest.raises(TypeError, match="holds_a_lock"):
        pack_task(holds_a_lock)


def test_a_worker_process_keeps_the_function_between_tasks() -> None:
    """On a real cluster (one worker process), a function by value is unpickled once and kept: its mutable default
    carries over from task to task, as it would in a process pool's worker (unpickled per task it would not)."""
    from sparrow_runtime import LocalCluster, NodeMonitorConfig, SparrowExecutor

    def calls_so_far(_: int, seen: list = []) -> int:  # noqa: B006 (the state that shows the function was kept)
        seen.append(1)
        return len(seen)

    with (
        LocalCluster(
            node_monitor=NodeMonitorConfig(executor="process"), node_monitors=1, slots=1, dashboard=False
        ) as cluster,
        SparrowExecutor(cluster.schedulers, secret=cluster.secret) as executor,
    ):
        assert [executor.submit(calls_so_far, i).result(timeout=60) for i in range(3)] == [1, 2, 3]


SHARED = "shared"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), None),
        ((SHARED, SHARED), {"k": [1, SHARED]}),  # memo references across arguments and keyword arguments
        (([1, 2], {"a": (3,)}), {"x": None}),
        ((b"x" * 70_000,), None),  # a large argument: written outside a frame, so the pickle opens unframed
        ((b"y" * 300, "z" * 100_000), {"a": b"q" * 80_000}),  # several frames
        ((lambda: 1,), None),  # an argument only cloudpickle pickles
        ((), {"x": 1.5}),
    ],
)
def test_a_packers_payload_is_the_whole_calls_pickle_with_the_functions_opcodes_spliced_in(args, kwargs) -> None:
    """TaskPacker puts the shipped function's opcodes in front of each call's pickled arguments: the payload is a
    valid pickle (pickletools walks it) that loads to the function and the very arguments, with their shared
    references shared, as the whole call pickled in one go does."""
    fn = _by_value()
    payload = TaskPacker(fn).pack(args, kwargs)
    pickletools.dis(payload, out=io.StringIO())
    loaded, loaded_args, loaded_kwargs = pickle.loads(payload)
    whole = cloudpickle.loads(cloudpickle.dumps((shipped.shipped(fn), args, kwargs or {})))
    assert loaded is whole[0] and loaded(1) == 2  # the receiver's one unpickled function
    assert len(loaded_args) == len(args) and loaded_kwargs.keys() == (kwargs or {}).keys()
    plain = [(a, b) for a, b in zip(loaded_args, whole[1], strict=True) if not callable(a)]
    assert all(a == b for a, b in plain) and loaded_kwargs == whole[2]
    if kwargs and "k" in kwargs:
        assert loaded_args[0] is loaded_kwargs["k"][1]


def test_a_packer_reads_the_function_once_and_the_next_one_sees_a_rebound_global(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a function reads is checked when its packer is made (once per job): a packer made before `OFFSET = 10`
    packs the function it saw, the next packer the new one."""
    fn = _by_value()
    before = TaskPacker(fn)
    monkeypatch.setitem(globals(), "OFFSET", 10)
    assert _value(before.pack((1,))) == 2
    assert _value(TaskPacker(fn).pack((1,))) == 11
