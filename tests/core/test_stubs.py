"""The typed face (sparrow_core/_core.pyi) matches the compiled module: every name sparrow_core
exports (`__all__`) is stubbed and comes from the extension, and every public method of its
classes is stubbed."""

import ast
import doctest
import inspect
from pathlib import Path

import pytest

import sparrow_core
import sparrow_core.sim
from sparrow_core import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
KERNEL_NAMES = sparrow_core.__all__


def stubbed():
    """{top-level name: set of its method names (empty for functions and constants)} from the stub."""
    tree = ast.parse(STUB.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def public_methods(cls):
    """Public callables of cls, without those an exception inherits from BaseException."""
    inherited = set(dir(BaseException)) if issubclass(cls, BaseException) else set()
    return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")} - inherited


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_kernel_names_are_stubbed_and_reexported(name):
    """Each kernel name is in the stub, in the extension and re-exported by sparrow_core."""
    assert name in stubbed()
    assert getattr(sparrow_core, name) is getattr(_core, name)


@pytest.mark.parametrize("name", [n for n in KERNEL_NAMES if isinstance(getattr(sparrow_core, n), type)])
def test_stubbed_methods_exist_and_public_methods_are_stubbed(name):
    """A class's stubbed methods exist at runtime, and its public methods are all stubbed."""
    stub_methods = stubbed()[name]
    cls = getattr(_core, name)
    assert {m for m in stub_methods if not hasattr(cls, m)} == set(), "stubbed but missing at runtime"
    assert public_methods(cls) - stub_methods == set(), "public at runtime but not stubbed"


def test_every_public_name_of_the_extension_is_exported_or_simulator_private():
    """Nothing public in the extension is left out of sparrow_core.__all__ by accident (the names the
    simulator package re-exports, and the numpy module the extension imports, are the exceptions)."""
    public = {name for name in dir(_core) if not name.startswith("_") and not inspect.ismodule(getattr(_core, name))}
    assert public - set(sparrow_core.__all__) == set(sparrow_core.sim.__all__) & public


@pytest.mark.parametrize("name", [n for n in KERNEL_NAMES if ">>>" in (getattr(sparrow_core, n).__doc__ or "")])
def test_docstring_examples_run(name):
    """Every example in a kernel's docstring runs and prints what it says."""
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(getattr(sparrow_core, name), name, globs=dict(vars(_core))):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.attempted > 0 and results.failed == 0
