"""GBNF, llama.cpp's grammar format, as llguidance's Lark dialect: the library's own parser and resolver
(`llguidance.gbnf_to_lark`), given rule names that cannot clash and the terminal rules already found.

- Names. The resolver renames `root` to `start`, `a-b` to `a_b`, `fooBar` to `foo_bar`, and a rule made only of
  terminals to upper case (a lexer rule); where a grammar already has a rule of the new name (`start`, `a-b` beside
  `a_b`, `Num` beside `num`) it refuses the grammar, which llama.cpp accepts. Here every rule is first given a distinct
  lower-case name that the resolver keeps, numbered where two would meet; a name Lark cannot have (`1st`) gets a
  prefix. A reference to a rule that does not exist keeps its name, for the resolver's error to quote.
- Terminal rules. The resolver finds them by sweeping every rule until a sweep changes nothing, which for a chain of N
  rules is N sweeps of N rules. Here they are found in one pass (a rule is terminal once every rule it refers to is,
  and `root` never is), so its one sweep finds nothing more."""

from __future__ import annotations

import re
from collections import defaultdict

LARK_NAME = re.compile(r"[a-z][a-z0-9_]*")


def gbnf_to_lark(text: str) -> str:
    """The grammar in the library's Lark dialect; the converter's exceptions as it raises them (`GbnfToLarkError`,
    bare Exceptions for a missing rule)."""
    from llguidance.gbnf_to_lark import GrammarParser, resolve

    rules = GrammarParser().parse(text)
    rules = _renamed(rules)
    _mark_terminals(rules)
    resolve(rules)
    return _written(rules)


def _children(node):
    """Every node below `node` (without recursion: groups nest as deep as the grammar has them)."""
    stack = list(node.children())
    while stack:
        child = stack.pop()
        yield child
        stack.extend(child.children())


def _references(rule) -> set[str]:
    from llguidance.gbnf_to_lark import RuleRefNode

    return {n.name for n in _children(rule) if isinstance(n, RuleRefNode)}


def _lark_name(name: str) -> str:
    """The resolver's own form of a name (`-` as `_`, `fooBar` as `foo_bar`, lower case), one Lark can read."""
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name.replace("-", "_")).lower()
    return name if LARK_NAME.fullmatch(name) else "rule_" + re.sub(r"[^a-z0-9_]", "_", name)


def _renamed(rules: dict) -> dict:
    """The rules under names the resolver keeps as they are, none of them `start` or another's, in their order."""
    from llguidance.gbnf_to_lark import RuleRefNode

    taken, names = {"root", "start"}, {}
    for old in rules:
        if old == "root":
            names[old] = old
            continue
        new = base = _lark_name(old)
        number = 1
        while new in taken:
            number += 1
            new = f"{base}_{number}"
        taken.add(new)
        names[old] = new
    for rule in rules.values():
        for node in _children(rule):
            if isinstance(node, RuleRefNode) and node.name in names:
                node.name = names[node.name]
        rule.name = names[rule.name]
    return {rule.name: rule for rule in rules.values()}


def _mark_terminals(rules: dict) -> None:
    """Mark the rules made only of terminals, as the resolver's sweeps would: those whose references all end in
    terminals, none of them `root`, none recursive (a missing rule is never terminal; the resolver names it)."""
    waiting = {name: _references(rule) for name, rule in rules.items()}
    users = defaultdict(list)
    for name, refs in waiting.items():
        for ref in refs:
            users[ref].append(name)
    ready = [name for name, refs in waiting.items() if not refs and name != "root"]
    while ready:
        name = ready.pop()
        rules[name].rule_is_terminal = True
        for user in users[name]:
            waiting[user].discard(name)
            if not waiting[user] and user != "root":
                ready.append(user)


def _written(rules: dict) -> str:
    """The resolved rules as Lark text, laid out as the library's converter writes them."""
    out, after_block = ["%llguidance {}\n\n"], True
    for rule in sorted(rules.values(), key=lambda r: r.order):
        text = str(rule)
        if not after_block and "\n" in text:
            out.append("\n")
        out.append(text + "\n")
        after_block = "\n" in text
        if after_block:
            out.append("\n")
    return "".join(out)
