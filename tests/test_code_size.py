"""A reader takes in a class or a function at once: no class in the package is over 150 lines, no function over 80.
Past that, split it by job (a pool's prefix-cache index apart from its allocator, an engine's intake apart from its
loop)."""

from __future__ import annotations

import ast
from pathlib import Path

import forwardpass

ROOT = Path(forwardpass.__file__).parent
MOST = {ast.ClassDef: 150, ast.FunctionDef: 80, ast.AsyncFunctionDef: 80}
OVER: set[str] = set()  # the known exceptions, none now; nothing may join it


def test_no_class_or_function_is_too_long():
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            most = MOST.get(type(node))
            if most is not None and node.end_lineno - node.lineno + 1 > most:
                long.append(f"{path.relative_to(ROOT).as_posix()}: {node.name}")
    assert set(long) <= OVER, f"over the limit: {sorted(set(long) - OVER)}"
