"""The package's import graph: no module imports one that imports it back (directly or through others), at its top
level or late, inside a function. A cycle makes the order of imports matter and the layers unreadable. And the file
readers sit below what runs a model: nothing in weights/ imports the engine, the server, the explorer or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import forwardpass

ROOT = Path(forwardpass.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, name: str, modules: set[str], late: bool = False) -> set[str]:
    """The forwardpass modules `path` imports at its top level, or with `late` anywhere in it, inside functions too
    (relative imports resolved; `from package import module` counts as the module; a type checker's imports are not
    counted). Importing a module runs its packages' __init__ first: each is counted, but the importer's own."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(
        node.test) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree) if late else tree.body:
        if id(node) in typing_only:
            continue
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
    if not late:
        return found
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}  # the importer and its packages
    return {".".join(m.split(".")[:i]) for m in found for i in range(2, m.count(".") + 2)} - own


def graph(late: bool = False) -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        edges[name] = {m for m in imports(path, name, set(modules), late) if m in modules and m != name}
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
    assert len(edges) > 30 and edges["forwardpass.engine.runner"] >= {"forwardpass.engine.native_step"}
    assert cycle(edges) is None, " → ".join(cycle(edges))


def test_no_late_import_closes_a_cycle():
    """A late import still runs the module it names, and every package on the way: a load that imports the loop,
    which imports the engine, which imports the loader, is a circle whether or not a function hides one step."""
    edges = graph(late=True)
    assert cycle(edges) is None, " → ".join(cycle(edges))


def test_the_file_readers_import_nothing_above_them():
    above = ("engine", "server", "explorer", "cli", "scale")
    climbs = sorted(f"{m} → {n}" for m, found in graph(late=True).items() if m.startswith("forwardpass.weights")
                    for n in found if n.split(".")[1] in above)
    assert not climbs, climbs


def test_the_check_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
