"""Pieces matched whole in a text before it is split or merged: control tokens (<|im_start|>, <start_of_turn>) and
user-defined pieces (a vocabulary's tags, runs of spaces)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator


class WholePieces:
    """Finds words (each with its token id) in a text, leftmost first and the longest there: at each place that begins
    with a word's first two characters (or is a one-character word), the lengths of the words that begin so are tried,
    longest first, against a dict."""

    def __init__(self, words: list[tuple[str, int]]):
        self.ids: dict[str, int] = {}
        for word, token_id in words:
            if word:
                self.ids.setdefault(word, token_id)
        lengths: dict[str, set[int]] = {}
        for word in self.ids:
            lengths.setdefault(word[:2], set()).add(len(word))
        self.lengths = {key: sorted(found, reverse=True) for key, found in lengths.items()}
        self.first = re.compile("[" + "".join(sorted({re.escape(w[0]) for w in self.ids})) + "]") if self.ids else None

    def split(self, text: str) -> Iterator[str | int]:
        """`text` in order: the stretches between words (never empty) as str, each word found as its id."""
        ids, lengths, at, start = self.ids, self.lengths, 0, 0
        while self.first is not None and (m := self.first.search(text, at)) is not None:
            i, at = m.start(), m.start() + 1
            for n in (n for key in (text[i:i + 2], text[i]) for n in lengths.get(key, ())):  # 2+ characters, then 1
                token_id = ids.get(text[i:i + n])
                if token_id is not None:
                    if i > start:
                        yield text[start:i]
                    yield token_id
                    start = at = i + n
                    break
        if start < len(text):
            yield text[start:]


def encoded(parts: Iterable[str | int], encode: Callable[[str], list[int]]) -> list[int]:
    """The ids of `parts` (as WholePieces.split gives them): a whole piece's id as it is, each stretch encoded."""
    ids: list[int] = []
    for part in parts:
        if isinstance(part, int):
            ids.append(part)
        else:
            ids += encode(part)
    return ids
