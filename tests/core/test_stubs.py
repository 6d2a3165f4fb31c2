"""The typed face (sparrow_core/_core.pyi) matches the compiled module: every stubbed name
exists, and every public function, class and method of the extension is stubbed."""

import ast
import inspect
from pathlib import Path

import pytest

import sparrow_core
from sparrow_core import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
KERNEL_NAMES = ["Rng", "probe_count", "sample_batch", "sample_batch_many", "sample_per_task", "sample_constrained",
                "Reservation", "ReservationQueue", "TaskTable"]


def stubbed():
    """{top-level name: set of its method names (empty for functions)} from the stub."""
    tree = ast.parse(STUB.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def public_methods(cls):
    return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")}


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_kernel_names_are_stubbed_and_reexported(name):
    """Each kernel name is in the stub, in the extension and re-exported by sparrow_core."""
    assert name in stubbed()
    assert getattr(sparrow_core, name) is getattr(_core, name)


@pytest.mark.parametrize("name", [n for n in KERNEL_NAMES if n[0].isupper()])
def test_stubbed_methods_exist_and_public_methods_are_stubbed(name):
    """A class's stubbed methods exist at runtime, and its public methods are all stubbed."""
    stub_methods = stubbed()[name]
    cls = getattr(_core, name)
    assert {m for m in stub_methods if not hasattr(cls, m)} == set(), "stubbed but missing at runtime"
    assert public_methods(cls) - stub_methods == set(), "public at runtime but not stubbed"
