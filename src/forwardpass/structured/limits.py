"""How large a constraint the grammar library is given, measured before it sees one.

The library builds a grammar by recursion: as deep as a chain of rules that refer to the next (or of `$ref`s, or of
groups within groups), and past what the thread's stack holds the whole process ends. Its time and memory grow
faster than a grammar's symbols, and past 65,535 symbols an assertion of its own fails (after minutes). So GBNF and
Lark grammars are counted in symbols and JSON schemas in objects and arrays, cheaply and without recursion, and
refused past these limits, at the line where a grammar passes them. A count bounds the depth too (each level of
recursion takes at least one symbol), so what is admitted compiles on a stack that holds the deepest of it several
times over (compile_threads.py), within seconds."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ConstraintError

MAX_GRAMMAR_SYMBOLS = 20_000  # a GBNF or Lark grammar's rule names and references, literals, classes, groups
MAX_SCHEMA_NODES = 10_000  # a JSON schema's objects and arrays
MAX_GBNF_NESTING = 100  # groups within groups in a GBNF rule (the converter reads them by recursion)
MAX_GRAMMAR_SIZE = 60_000  # the library's own count of a compiled grammar's symbols, below its 65,535

# one match a token, in order: comments and repeat counts (no symbols), literals and character classes (escapes
# included), names, and the three characters that are symbols or close one
GBNF_TOKENS = re.compile(r'#[^\r\n]*|\{[^}]*\}|"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[\w-]+|[(.)]', re.S)
# comments, literals, regular expressions, special tokens (<|end|>, <[12]>), names, and opening brackets (a group,
# an optional part, a repeat count or an inline JSON schema's object)
LARK_TOKENS = re.compile(r'//[^\n]*|"(?:[^"\\\n]|\\.)*"|/(?:[^/\\\n]|\\.)+/|<[^<>\n]*>|[A-Za-z_]\w*|[(\[{]')

SYMBOLS = "symbols (rules, references, literals, character classes and groups)"


def check_gbnf(text: str, what: str) -> None:
    """Refuse a GBNF grammar past MAX_GRAMMAR_SYMBOLS or MAX_GBNF_NESTING, naming the line."""
    count = depth = 0
    for m in GBNF_TOKENS.finditer(text):
        token = m[0]
        if token[0] in "#{":
            continue
        if token == ")":
            depth = max(depth - 1, 0)
            continue
        count += 1
        depth += token == "("
        if count > MAX_GRAMMAR_SYMBOLS:
            raise ConstraintError(f"{what} is past the limit of {MAX_GRAMMAR_SYMBOLS:,} {SYMBOLS} at line "
                                  f"{line(text, m.start()):,}: make it smaller")
        if depth > MAX_GBNF_NESTING:
            raise ConstraintError(f"{what} nests groups more than {MAX_GBNF_NESTING} deep at line "
                                  f"{line(text, m.start()):,}")


def check_lark(text: str, what: str) -> None:
    """Refuse a Lark grammar past MAX_GRAMMAR_SYMBOLS, naming the line (the library limits its own nesting)."""
    count = 0
    for m in LARK_TOKENS.finditer(text):
        if m[0].startswith("//"):
            continue
        count += 1
        if count > MAX_GRAMMAR_SYMBOLS:
            raise ConstraintError(f"{what} is past the limit of {MAX_GRAMMAR_SYMBOLS:,} {SYMBOLS} at line "
                                  f"{line(text, m.start()):,}: make it smaller")


def check_schema(schema: Any) -> None:
    """Refuse a JSON schema of more than MAX_SCHEMA_NODES objects and arrays."""
    count, stack = 0, [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        else:
            continue
        count += 1
        if count > MAX_SCHEMA_NODES:
            raise ConstraintError(f"JSON schema is past the limit of {MAX_SCHEMA_NODES:,} objects and arrays: make "
                                  f"it smaller")


def line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1
