"""A reader takes in a class or a function at once: no class in the package is over 150 lines, no function over 80,
in Python or in the kernels' C. Past that, split it by job (a pool's prefix-cache index apart from its allocator, an
engine's intake apart from its loop, a step's attention apart from its feed-forward)."""

from __future__ import annotations

import ast
import re
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


def c_functions(text: str) -> list[tuple[str, int]]:
    """(name, lines) of each function a C file defines: a body opened at the file's top level after a parameter list,
    counted from the line of its name to its closing brace (comments, strings and characters left out)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(\\.|[^\"\\])*\"|'(\\.|[^'\\])*'",
                  lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    found, depth, start = [], 0, None
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                head = text[:i].rstrip()
                name = re.search(r"(\w+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*$", head)
                start = (name.group(1), text.count("\n", 0, name.start())) if name else None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start:
                found.append((start[0], text.count("\n", 0, i) - start[1] + 1))
                start = None
    return found


def test_no_c_function_is_too_long():
    long = [f"{path.name}: {name} ({n} lines)" for path in sorted((ROOT / "kernels").glob("*.[ch]"))
            for name, n in c_functions(path.read_text()) if n > MOST[ast.FunctionDef]]
    assert long == []


def test_the_c_count_finds_a_function_and_its_lines():
    text = ('static int f(int a, void (*g)(int)) {  // {\n    if (a) { g(a); }\n    return "}"[0];\n}\n'
            'struct S { int x; };\n')
    assert c_functions(text) == [("f", 4)]
