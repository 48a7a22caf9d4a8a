"""What a client sent, as a log line or an error message repeats it: a model id, a field's name, a path. Written
raw, a newline in it starts a line of the log's own look, and an escape sequence clears or retitles the operator's
terminal; echoed whole, an id as long as the body allows comes back whole in its error. So every such value is cut
to its first `LIMIT` characters, with how many more there were, and every character that is not printable (controls
C0, DEL and C1, the line and paragraph separators, format characters) is written as its escape, as repr writes it."""

from __future__ import annotations

import re

LIMIT = 120  # characters kept of a value: enough to tell one id or path from another
# what ends a line or commands a terminal: a path holding one names no route (app.py)
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def cut(text: str, limit: int = LIMIT) -> str:
    """`text`, or its first `limit` characters and how many more it had (for the JSON log, which escapes the rest)."""
    return text[:limit] + rest(text, limit)


def shown(text: str, limit: int = LIMIT) -> str:
    """`text` as a log line or a message repeats it bare (a path): cut, and every character that is not printable or
    is a backslash written as its escape (`\\n`, `\\x1b`, `\\u2028`)."""
    kept = "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in text[:limit])
    return kept + rest(text, limit)


def quoted(text: str, limit: int = LIMIT) -> str:
    """`text` in quotes, as an error message names a value (a model id, a field): repr of its first `limit`
    characters, and how many more it had."""
    return repr(text[:limit]) + rest(text, limit)


def rest(text: str, limit: int) -> str:
    return f"…(+{len(text) - limit} chars)" if len(text) > limit else ""
