"""pack_task's fast path: the C pickler only where cloudpickle would make the same bytes, and cloudpickle
for everything it must carry by value."""

from __future__ import annotations

import json
import os.path
import pickle
import subprocess
import sys
import types

import cloudpickle
import pytest

from sparrow_runtime.wire.task_codec import pack_task, run_task, unpack_outcome


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (int, (5,), None),
        (len, ("abc",), None),
        (os.path.join, ("a", "b"), None),
        (json.dumps, ("x",), {"indent": 2}),
        (dict, (), {"a": 1, "b": None}),
        (max, (1, 2.5, None is None), None),
        (os.path.join, ("a", "a"), None),  # one str object twice: the pickle refers back to it
        (str, (b"x",), None),
    ],
)
def test_an_importable_callable_with_plain_arguments_packs_to_cloudpickles_bytes(fn, args, kwargs):
    """The fast path changes nothing on the wire: the bytes are cloudpickle's, and the task runs (the callable's
    opcodes spliced in front of the arguments where nothing refers back to the memo, TaskPacker)."""
    payload = pack_task(fn, args, kwargs)
    assert payload == cloudpickle.dumps((fn, args, kwargs or {}))
    assert unpack_outcome(run_task(payload)) == fn(*args, **(kwargs or {}))


def test_the_fast_path_does_not_call_cloudpickle(monkeypatch):
    """An importable callable with plain arguments is pickled without cloudpickle's Python-level pickler."""

    def refuse(obj, *args, **kwargs):
        raise AssertionError("cloudpickle.dumps was called")

    monkeypatch.setattr(cloudpickle, "dumps", refuse)
    assert unpack_outcome(run_task(pack_task(int, ("7",)))) == 7
    with pytest.raises(TypeError, match="cannot be pickled"):
        pack_task(len, ([1],))  # a list argument: cloudpickle's, which here refuses


def test_a_lambda_and_a_local_function_go_by_value_and_run():
    """What the C pickler would refuse (it pickles functions by a name nobody can look up) is cloudpickle's."""
    factor = 3

    def local(x):
        return x * factor

    for fn, args, want in ((lambda x: x + 1, (1,), 2), (local, (2,), 6)):
        with pytest.raises((pickle.PicklingError, AttributeError)):
            pickle.dumps((fn, args, {}))
        assert unpack_outcome(run_task(pack_task(fn, args))) == want


def test_a_bound_method_goes_through_cloudpickle_with_its_object():
    """A method bound to an object carries that object: cloudpickle's bytes, and the object's state runs."""
    items = [1, 1, 2]
    assert pack_task(items.count, (1,)) == cloudpickle.dumps((items.count, (1,), {}))
    assert unpack_outcome(run_task(pack_task(items.count, (1,)))) == 2


def test_a_main_module_function_is_pickled_by_value_for_a_worker_without_that_module():
    """A function defined in a script (`__main__`) runs in another process, which has no such `__main__`."""
    script = (
        "import sys\n"
        "from sparrow_runtime.wire.task_codec import pack_task\n"
        "def double(x):\n"
        "    return 2 * x\n"
        "sys.stdout.buffer.write(pack_task(double, (21,)))\n"
    )
    payload = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=60).stdout
    assert unpack_outcome(run_task(payload)) == 42


def test_a_function_of_a_module_registered_by_value_is_pickled_by_value():
    """register_pickle_by_value (sparrow submit uses it for the user's script) is honoured, for the
    module and for the modules of its package."""
    package = types.ModuleType("sparrow_test_pkg")
    module = types.ModuleType("sparrow_test_pkg.tasks")
    exec("def triple(x):\n    return 3 * x\n", module.__dict__)
    module.triple.__module__ = module.__name__
    package.tasks = module
    sys.modules[package.__name__], sys.modules[module.__name__] = package, module
    try:
        by_reference = pack_task(module.triple, (2,))
        assert by_reference == pickle.dumps((module.triple, (2,), {}), cloudpickle.DEFAULT_PROTOCOL)
        cloudpickle.register_pickle_by_value(package)
        try:
            by_value = pack_task(module.triple, (2,))
            assert cloudpickle.dumps(module.triple) in by_value  # the function by value (once: wire/shipped.py)
        finally:
            cloudpickle.unregister_pickle_by_value(package)
        assert by_value != by_reference
    finally:
        del sys.modules[package.__name__], sys.modules[module.__name__]
    assert unpack_outcome(run_task(by_value)) == 6  # the module is gone here: only by value works


def test_arguments_that_are_not_plain_go_through_cloudpickle():
    """A list, a set or an object among the arguments: cloudpickle's bytes (it may pickle them by value)."""
    for fn, args in ((len, ([1, 2],)), (len, ({3},)), (id, (object(),))):
        assert pack_task(fn, args) == cloudpickle.dumps((fn, args, {}))


def test_something_not_callable_is_refused_naming_its_type():
    """The check before either pickler."""
    with pytest.raises(TypeError, match="a task must be callable, got int"):
        pack_task(5)


class _ExitAtPickle:
    def __reduce__(self):
        raise SystemExit(3)


class _ErrorAtPickle:
    def __reduce__(self):
        raise pickle.PicklingError("no pickling this")


@pytest.mark.parametrize(("result", "error"), [(_ExitAtPickle, SystemExit), (_ErrorAtPickle, pickle.PicklingError)])
def test_a_result_that_raises_while_pickled_gives_that_exception_to_the_caller(result, error):
    """As the process pool: the exception raised while pickling the result (SystemExit too, which used
    to escape run_task and kill the worker) is the task's outcome, with the result's type named."""
    outcome = run_task(pack_task(result))
    assert not outcome.ok and outcome.failure == 0
    assert f"the task's result {result.__name__} could not be pickled" in outcome.error
    with pytest.raises(error):
        unpack_outcome(outcome)
