"""Pieces matched whole in a text before it is split or merged: control tokens (<|im_start|>, <start_of_turn>) and
user-defined pieces."""

from __future__ import annotations

import re


class WholePieces:
    """Finds words (pieces matched whole) in a text, leftmost first and the longest there: at each place that begins
    with a word's first two characters (or is a one-character word), the lengths of the words that begin so are tried,
    longest first, against a dict."""

    def __init__(self, words: list[tuple[str, int]]):
        self.words = words
        self.ids: dict[str, int] = {}
        for word, token_id in words:
            if word:
                self.ids.setdefault(word, token_id)
        lengths: dict[str, set[int]] = {}
        for word in self.ids:
            lengths.setdefault(word[:2], set()).add(len(word))
        self.lengths = {key: sorted(found, reverse=True) for key, found in lengths.items()}
        self.first = re.compile("[" + "".join(sorted({re.escape(w[0]) for w in self.ids})) + "]") if self.ids else None

    def find(self, text: str):
        """(start, end, id) of each word found, in order, none overlapping."""
        if self.first is None:
            return
        ids, lengths, at = self.ids, self.lengths, 0
        while (m := self.first.search(text, at)) is not None:
            i, at = m.start(), m.start() + 1
            for key in (text[i:i + 2], text[i]):  # words of two characters or more, then of one
                for n in lengths.get(key, ()):
                    token_id = ids.get(text[i:i + n])
                    if token_id is not None:
                        yield i, i + n, token_id
                        at = i + n
                        break
                else:
                    continue
                break
