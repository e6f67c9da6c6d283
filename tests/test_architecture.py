"""The layers, checked on the source by AST: every import anywhere in a module counts (top level,
inside functions, under `if TYPE_CHECKING:`), because each is a dependency someone must follow.

- no import cycle between our modules;
- validators ← exporters ← genservice ← training ← genservice.cli: `validators` imports none of
  the others; `exporters` only validators; `genservice` validators and exporters, never
  `training`; `training` anything below it. The command line (`genservice.cli`, and
  `genservice.__main__` that runs it) is the one place that crosses upward, and nothing imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("validators", "exporters", "genservice", "training")
# What each layer may import besides itself: the CLI every layer, and no layer the CLI.
ALLOWED = {
    "validators": set(),
    "exporters": {"validators"},
    "genservice": {"validators", "exporters"},
    "training": {"validators", "exporters", "genservice"},
    "cli": {"validators", "exporters", "genservice", "training"},
}
CLI = ("genservice.cli", "genservice.__main__")

Edge = tuple[str, str, int]  # importer, imported, line


def module_files() -> dict[str, Path]:
    """Every module of the four packages: dotted name -> file."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported_names(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, *([base] if base else [])])
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    """(importer, imported module, line) for every import of one of our modules by another."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges = set()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported_names(node, module, path.name == "__init__.py"):
                target = resolve(name) if name.split(".")[0] in PACKAGES else None
                if target is not None and target != module:
                    edges.add((module, target, getattr(node, "lineno", 0)))
    return sorted(edges)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(module: str) -> str:
    """The layer a module belongs to: its top package, or `cli` for the command line."""
    if any(module == cli or module.startswith(cli + ".") for cli in CLI):
        return "cli"
    return module.split(".")[0]


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges(module_files())


def test_the_scanner_sees_every_kind_of_import(edges: list[Edge]) -> None:
    pairs = {(a, b) for a, b, _ in edges}
    assert ("genservice.cli", "genservice.cli.validate") in pairs  # top level
    assert ("genservice.cli.train", "training.sft") in pairs  # inside a function
    assert ("training.rl_monitor", "training.rl_config") in pairs  # under TYPE_CHECKING
    assert ("genservice.__main__", "genservice.cli") in pairs
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles(edges: list[Edge]) -> None:
    graph: dict[str, set[str]] = {}
    for importer, imported, _ in edges:
        graph.setdefault(importer, set()).add(imported)
    found = cycles(graph)
    described = []
    for component in found:
        inside = [f"{a} -> {b} (line {n})" for a, b, n in edges if {a, b} <= set(component)]
        described.append(f"cycle among {', '.join(component)}: " + "; ".join(inside))
    assert not found, "\n".join(described)


def test_layers_import_only_downward(edges: list[Edge]) -> None:
    wrong = [
        f"{a} (line {n}) imports {b}: {layer(a)} may import only {sorted(ALLOWED[layer(a)])}"
        for a, b, n in edges
        if layer(b) != layer(a) and layer(b) not in ALLOWED[layer(a)]
    ]
    assert not wrong, "\n".join(wrong)
