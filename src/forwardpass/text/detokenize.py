"""Token ids → streamed text: never emits half a UTF-8 character or any part of a stop string."""

from __future__ import annotations

from .tokenizer import Tokenizer


class TextStream:
    """Feed token ids one at a time; get back the text that is safe to show so far."""

    def __init__(self, tokenizer: Tokenizer, stop: list[str] = ()):
        self.tokenizer, self.stop = tokenizer, list(stop)
        self.ids: list[int] = []
        self.settled, self.read = "", 0  # the text of ids[:read], every character complete
        self.window = 0  # where decoding restarts: before `read`, at text that starts with no space, so a
        # tokenizer's start-of-text rule (a stripped leading space) never touches new text
        self.emitted = 0  # characters already handed out
        self.text = ""  # the final text, once `stopped` or flushed
        self.stopped: str | None = None  # the stop string that ended the text

    def add(self, token_id: int) -> str:
        """Append a token; return the new text that can be shown (may be empty)."""
        self.ids.append(token_id)
        full = self._decoded()
        hits = [(full.find(s), s) for s in self.stop if s in full]
        if hits:
            at, self.stopped = min(hits)
            self.text = full[:at]
            return self._emit(at)
        incomplete = len(full) - len(full.rstrip("\ufffd"))  # a multi-byte character still arriving
        held = max([incomplete] + [_overlap(full, s) for s in self.stop])
        self.text = full
        return self._emit(len(full) - held)

    def _decoded(self) -> str:
        """The text of every id so far, decoding only the few since the last settled one (not all: that grows
        with every token)."""
        window = self.tokenizer.decode(self.ids[self.window:])
        known = self.tokenizer.decode(self.ids[self.window:self.read])
        if not window.startswith(known):  # a tokenizer whose windows do not extend each other: decode it all
            return self.tokenizer.decode(self.ids)
        new = window[len(known):]
        full = self.settled + new
        if not full.endswith("\ufffd"):  # no character pending: settle here
            if new[:1] and not new[:1].isspace():  # restart the window at text that starts with no space
                self.window = self.read
            self.read, self.settled = len(self.ids), full
        return full

    def flush(self) -> str:
        """The generation ended without a stop string: hand out whatever was held back."""
        return self._emit(len(self.text))

    def _emit(self, end: int) -> str:
        delta = self.text[self.emitted:end] if end > self.emitted else ""
        self.emitted = max(self.emitted, end)
        return delta


def _overlap(text: str, stop: str) -> int:
    """Length of the longest end of `text` that is a proper start of `stop` (it may yet become `stop`)."""
    for k in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:k]):
            return k
    return 0
