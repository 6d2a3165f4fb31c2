"""A griffe extension for the docs site: the API of the compiled extension sparrow_core._core.

griffe reads `_core.pyi` statically, which gives the types; the docstrings live in the Cython
source (`_core.pyx` and its `.pxi` parts) and are compiled into the extension. This extension
imports the built extension and gives each stub object its compiled docstring (less the signature
line that Cython's `embedsignature` puts first), so the reference shows the stub's types with the
source's prose, each written once. A stub docstring stays where the compiled object has none
(constants and attributes, which cannot carry one at run time).

An `__all__` that griffe cannot read statically (sparrow_runtime computes it) is taken from the
imported module. Then it warns, which fails the strict build, for every public name of the modules the reference
documents that still has no docstring.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from pathlib import Path

import griffe

logger = logging.getLogger("mkdocs.plugins.griffe_compiled")

COMPILED = "sparrow_core._core"
_SIGNATURE = re.compile(r"^[\w.]+\(.*\)(\s*->\s*.+)?$")


def compiled_docstring(value: object) -> str | None:
    """The docstring of a compiled object without the signature line embedsignature adds."""
    text = inspect.getdoc(value)
    if not text:
        return None
    lines = text.splitlines()
    if lines and _SIGNATURE.match(lines[0]):
        lines = lines[1:]
    text = inspect.cleandoc("\n".join(lines)).strip()
    if not text or text.startswith("Initialize self."):
        return None
    return text


class CompiledDocstrings(griffe.Extension):
    """Docstrings of sparrow_core._core from the built extension, onto the objects of its stubs;
    a warning for each public name of `modules` (those the reference documents) with no docstring."""

    def __init__(self, modules: list[str]) -> None:
        self.modules = modules

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: object) -> None:
        if pkg.path == "sparrow_core":
            _load_stubs(pkg, loader)
        for path in self.modules:
            if path == pkg.path and pkg.exports is None and hasattr(importlib.import_module(path), "__all__"):
                pkg.exports = list(importlib.import_module(path).__all__)  # computed (sorted(_EXPORTS))
        for path in self.modules:
            if path == pkg.path or path.startswith(pkg.path + "."):
                module = pkg if path == pkg.path else pkg[path[len(pkg.path) + 1 :]]
                for obj in public_objects(module):
                    if not obj.docstring or not obj.docstring.value.strip():
                        _inherit(obj, path)
                    if not obj.docstring or not obj.docstring.value.strip():
                        logger.warning("%s has no docstring (a public name of the API reference)", obj.path)


def _load_stubs(pkg: griffe.Module, loader: griffe.GriffeLoader) -> None:
    """griffe inspects the compiled module when it can import it and merges the stub's types in; keep only
    what the stub declares (inspection also lists every inherited dunder), without inspection's labels
    ("method descriptor"), and with the compiled text."""
    runtime = importlib.import_module(COMPILED)
    stub_path = Path(runtime.__file__).with_name("_core.pyi")
    stub = griffe.visit("_core", filepath=stub_path, code=stub_path.read_text())
    _fill(pkg["_core"], stub, runtime, loader)


def _fill(obj: griffe.Object, stub: griffe.Object, runtime: object, loader: griffe.GriffeLoader) -> None:
    for name in list(obj.members):
        member = obj.members[name]
        if member.is_alias:
            continue
        if name not in stub.members:
            obj.del_member(name)
            continue
        declared = stub.members[name]
        member.labels.difference_update({"method descriptor", "builtin", "getset descriptor", "class-attribute"})
        value = getattr(runtime, name, None)
        text = compiled_docstring(value) if (member.is_class or member.is_function) and value is not None else None
        text = text or (declared.docstring.value if declared.docstring else None)
        member.docstring = (
            griffe.Docstring(
                text, parent=member, parser=loader.docstring_parser, parser_options=loader.docstring_options
            )
            if text
            else None
        )
        if member.is_function and declared.is_function:
            member.parameters, member.returns = declared.parameters, declared.returns
        if member.is_attribute and declared.is_attribute:
            member.value = declared.value  # the stub's (none for a constant), not the inspected repr
        if member.is_class:
            _fill(member, declared, value, loader)


def _inherit(obj: griffe.Object, module_path: str) -> None:
    """A method with no docstring of its own takes the one Python finds up its class's MRO
    (SparrowExecutor.submit: concurrent.futures.Executor's)."""
    if not obj.is_function or obj.parent is None or not obj.parent.is_class:
        return
    cls = getattr(importlib.import_module(module_path), obj.parent.name, None)
    text = compiled_docstring(getattr(cls, obj.name, None)) if cls is not None else None
    if text:
        obj.docstring = griffe.Docstring(text, parent=obj)


def public_names(module: griffe.Module) -> list[str]:
    """The names a module exports: its `__all__`, or else its members without a leading underscore."""
    if module.exports is not None:
        return [e if isinstance(e, str) else e.name for e in module.exports]
    return [name for name, member in module.members.items() if member.is_public and not member.is_module]


def public_objects(module: griffe.Module):
    """The objects a module exports, and the public methods and properties of its exported classes
    (a class's data attributes are shown with their types, a docstring optional)."""
    for name in public_names(module):
        obj = module[name]
        if obj.is_alias:
            obj = obj.final_target
        yield obj
        if obj.is_class:
            for member_name, member in obj.members.items():
                if not member_name.startswith("_") and not member.is_alias and member.is_function:
                    yield member
