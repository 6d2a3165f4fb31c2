"""The import graph of sparrow_core, sparrow_runtime and sparrow_experiments, read with `ast` from every
module's source: every module is in a room of ROOMS, no module imports a room above its own, and no modules import
each other in a cycle. Every import counts: at the top, inside a function, or under TYPE_CHECKING.

ROOMS is the one place the rooms' order is written, lowest first. A room is a subpackage, or a module
at the top of a package. A module may import its own room and the rooms before it in the list.
A new room goes in the list, at the height its imports give it.

The experiments are a package of their own: of sparrow_runtime, only the `sparrow` command's experiment and
demo entry points (EXPERIMENT_ENTRY_POINTS) import them, and they import only the runtime pieces that
sparrow_experiments' docstring names (RUNTIME_PIECES).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("sparrow_core", "sparrow_runtime", "sparrow_experiments")

ROOMS = (
    "sparrow_core",  # the compiled kernels (_core) and the package that re-exports them
    "sparrow_core.sim",  # the simulator, on the same kernels
    "sparrow_core.demo",
    "sparrow_runtime.errors",  # the exception hierarchy
    "sparrow_runtime.wire",  # messages, limits, framing, connections, handshake, task codec
    "sparrow_runtime.data",  # the data plane: value store, transfers, dependents with remote inputs
    "sparrow_runtime.views",  # notebook views of the user objects (their public attributes only)
    "sparrow_runtime.services",  # scheduler, node monitor, executors, metrics, ready line, LocalCluster
    "sparrow_runtime.client",  # Client, SparrowExecutor, dependencies
    "sparrow_runtime.dask_annotations",
    "sparrow_runtime.dask",
    "sparrow_runtime.joblib",
    "sparrow_runtime.dashboard",
    "sparrow_runtime.demo",
    "sparrow_experiments",  # the experiments and the simulator's replay of a run (their own package)
    "sparrow_runtime.cli",  # the `sparrow` command reads everything below it
    "sparrow_runtime",  # the package's own __init__: the public names, re-exported
)


# the modules of sparrow_runtime that may import sparrow_experiments: the commands that run them
EXPERIMENT_ENTRY_POINTS = {
    "sparrow_runtime.cli.experiment",  # sparrow experiment cluster
    "sparrow_runtime.cli.experiment_steal",  # sparrow experiment steal
    "sparrow_runtime.cli.experiment_steal_study",  # sparrow experiment steal-study
    "sparrow_runtime.cli.local",  # sparrow local --demo (its report against the replay)
    "sparrow_runtime.cli.demo_view",  # the demo's and the experiments' terminal view of that report
}
# the modules of sparrow_runtime that sparrow_experiments imports (its docstring says why each)
RUNTIME_PIECES = {
    "sparrow_runtime.client.core",
    "sparrow_runtime.demo.task",
    "sparrow_runtime.demo.workload",
    "sparrow_runtime.services.cpus",
    "sparrow_runtime.services.placement_log",
    "sparrow_runtime.services.steal_log",
    "sparrow_runtime.services.steal_logic",
    "sparrow_runtime.wire.messages",
    "sparrow_runtime.wire.task_codec",
}


def _modules() -> dict[str, Path]:
    """Every module of PACKAGES, by dotted name: its .py source, or its .pyi stub for a compiled one."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        root = Path(importlib.import_module(package).__path__[0])
        for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.pyi")):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found.setdefault(".".join(parts), path)
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(module of PACKAGES, line) for each import in `name`'s source: `from .a import b` is module
    `.a.b` if that is a module, else `.a`."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules and target.partition(".")[0] in PACKAGES:
                target = target.rpartition(".")[0]  # `import a.b.c` of a name inside a module
            if target in modules and target != name:
                yield target, node.lineno


def _graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        graph[name] = {}
        for target, line in _imported(name, path, modules):
            graph[name].setdefault(target, line)
    return graph


def room_of(module: str) -> str | None:
    """The deepest room that `module` is, or is inside; None if it is in none."""
    rooms = [room for room in ROOMS if module == room or module.startswith(room + ".")]
    return max(rooms, key=len, default=None)


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    members = set(component)
    arrows = [f"{a} imports {b} (line {line})" for a in component for b, line in graph[a].items() if b in members]
    return "; ".join(arrows)


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each import of a room above the importer's own, described."""
    height = {room: i for i, room in enumerate(ROOMS)}
    found = []
    for module, targets in sorted(graph.items()):
        for target, line in sorted(targets.items()):
            room, other = room_of(module), room_of(target)
            if room is not None and other is not None and height[other] > height[room]:
                found.append(f"{module} (room {room}) imports {target} (room {other}), line {line}")
    return found


def test_every_module_is_in_a_room():
    """Each module of both packages belongs to a room of ROOMS, so the order rule covers all of them."""
    graph = _graph()
    assert len(graph) > 50, f"found only {len(graph)} modules: is the package installed from this tree?"
    homeless = sorted(module for module in graph if room_of(module) is None)
    assert not homeless, f"modules in no room of ROOMS (add their room at its height): {homeless}"


def test_no_import_from_a_lower_room_to_a_higher_one():
    """No module imports a room that ROOMS lists above its own (the library never imports its CLI)."""
    upward = upward_imports(_graph())
    assert not upward, "imports from a lower room to a higher one:\n" + "\n".join(upward)


def test_no_import_cycle_between_modules():
    """No modules import each other, directly or around a loop."""
    graph = _graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_describe(c, graph) for c in found)


def test_the_checks_see_a_planted_cycle_and_arrow_up():
    """The cycle finder catches a loop of three, and the room rule a library module importing the CLI."""
    planted = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert cycles(planted) == [["a", "b", "c"]]
    arrow_up = {"sparrow_runtime.services.x": {"sparrow_runtime.cli.config": 7, "sparrow_runtime.wire.framing": 8}}
    assert upward_imports(arrow_up) == [
        "sparrow_runtime.services.x (room sparrow_runtime.services) imports sparrow_runtime.cli.config"
        " (room sparrow_runtime.cli), line 7"
    ]


def test_the_graph_resolves_relative_and_absolute_imports():
    """Relative imports (`from ..services.local_cluster import X`, `from . import m`) and absolute ones
    become edges to the modules they name, so the rules above see real arrows."""
    graph = _graph()
    assert "sparrow_runtime.services.local_cluster" in graph["sparrow_runtime.cli.local"]
    assert "sparrow_runtime.wire.address" in graph["sparrow_runtime.services.ready_line"]
    assert "sparrow_core._core" in graph["sparrow_core.sim"]
    assert "sparrow_core" in graph["sparrow_runtime.services.node_monitor_logic"]


def test_only_the_experiment_and_demo_commands_import_the_experiments():
    """sparrow_runtime imports sparrow_experiments only from the `sparrow` commands that run them, so the
    runtime package holds what a cluster runs."""
    graph = _graph()
    importers = {
        module
        for module, targets in graph.items()
        if module.startswith("sparrow_runtime") and any(t.startswith("sparrow_experiments") for t in targets)
    }
    assert importers <= EXPERIMENT_ENTRY_POINTS, (
        f"importers outside the entry points: {importers - EXPERIMENT_ENTRY_POINTS}"
    )
    assert "sparrow_runtime.cli.experiment" in importers  # the check sees the real arrows


def test_the_experiments_import_only_the_runtime_pieces_they_name():
    """Every sparrow_runtime module that sparrow_experiments imports is one its docstring names, so a new
    dependency on the runtime's internals is a deliberate change."""
    graph = _graph()
    used = {
        target
        for module, targets in graph.items()
        if module.startswith("sparrow_experiments")
        for target in targets
        if target.startswith("sparrow_runtime")
    }
    assert used - {"sparrow_runtime"} <= RUNTIME_PIECES, f"undeclared runtime pieces: {used - RUNTIME_PIECES}"
    assert "sparrow_runtime.demo.workload" in used  # the check sees the real arrows
    doc = importlib.import_module("sparrow_experiments").__doc__ or ""
    for piece in RUNTIME_PIECES - {"sparrow_runtime.client.core"}:  # Client and JobHandle are its public names
        assert piece.removeprefix("sparrow_runtime.").rpartition(".")[0] in doc or piece.split(".")[-1] in doc
