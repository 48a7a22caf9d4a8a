"""The package's import graph: no module imports, at its top level, one that imports it back (directly or through
others). A cycle makes the order of imports matter and the layers unreadable; a late import inside a function (the
CLI's, the explorer's) is allowed, and not counted."""

from __future__ import annotations

import ast
from pathlib import Path

import forwardpass

ROOT = Path(forwardpass.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The forwardpass modules `path` imports at its top level (relative imports resolved; `from package import
    module` counts as the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("forwardpass")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("forwardpass"):
                named = {f"{base}.{a.name}" for a in node.names}
                found |= named & modules if named <= modules else {base}
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        edges[name] = {m for m in top_level_imports(path, name, set(modules)) if m in modules and m != name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycles():
    edges = graph()
    assert len(edges) > 30 and edges["forwardpass.engine.runner"] >= {"forwardpass.engine.native"}
    assert cycle(edges) is None, " → ".join(cycle(edges))


def test_the_check_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
